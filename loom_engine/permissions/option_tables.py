"""Every option of the read-only commands Loom runs without asking, as their parsers
take them, and which of those options make a command more than a reader.

The tables are those of GNU coreutils 9, grep 3, diffutils 3 and ripgrep 14-15;
``tests/security/test_getopt_differential.py`` compares each of them with the program
installed, abbreviation by abbreviation. An option missing from a table is unknown,
so the command asks; an option a table holds that the user's (older) program lacks
can only make a prefix ambiguous for Loom that is not for the program, never the
reverse, as long as the table holds that program's options too.

Keys: a short option's key is ``-X``; a long option's is ``--name`` (or its alias's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .find_args import FIND_FOLLOWS, FIND_REFUSED, parse_find
from .getopt import OptionTable, ParsedArguments, parse_arguments


@dataclass(frozen=True)
class Reader:
    """A read-only command: its options (None: find's own grammar), and what some of
    them make it do.

    ``follows``: the options that make it follow symlinks met inside the folders it
    walks. ``refused``: the options that make it write, run a program, or read a list of
    file names from a file (names no check sees). ``first_operand_pattern``: its first
    operand is a pattern unless one of ``pattern_options`` is given. ``tree_options``:
    options whose value names a folder it walks like an operand. ``descends``: the
    options that make it read every file below a folder (``always``: it always does);
    ``lists``: without them it still reads the entries of a folder it is given."""

    options: OptionTable | None
    follows: frozenset[str] = frozenset()
    refused: frozenset[str] = frozenset()
    first_operand_pattern: bool = False
    pattern_options: frozenset[str] = frozenset()
    tree_options: frozenset[str] = frozenset()
    descends: frozenset[str] = frozenset()
    always: bool = False
    lists: bool = False

    def parse(self, args: Sequence[str]) -> ParsedArguments:
        if self.options is None:
            return parse_find(args)
        return parse_arguments(self.options, args)


_HELP = "help version"

CAT = OptionTable.of(
    "AbeEnstTuv",
    f"show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting {_HELP}")

HEAD = OptionTable.of(
    "c:n:qvz0123456789",
    f"bytes= lines= quiet silent>quiet verbose zero-terminated -presume-input-pipe {_HELP}")

# tail's obsolete `-5l`/`-b` forms are not taken: they ask.
TAIL = OptionTable.of(
    "c:fFn:qs:vz0123456789",
    "bytes= follow? lines= max-unchanged-stats= pid= quiet silent>quiet retry sleep-interval= "
    f"verbose zero-terminated -disable-inotify -presume-input-pipe {_HELP}")

WC = OptionTable.of(
    "clLmw",
    f"bytes chars lines words debug files0-from= max-line-length {_HELP}")

GREP = OptionTable.of(
    "0123456789A:B:C:D:EFGHILPRTUVX:Zabcd:e:f:hilm:noqrsuvwxyz",
    "basic-regexp extended-regexp fixed-regexp>fixed-strings fixed-strings perl-regexp "
    "after-context= before-context= binary-files= byte-offset context= color? colour?>color "
    "count devices= directories= exclude= exclude-from= exclude-dir= file= "
    "files-with-matches files-without-match group-separator= include= ignore-case "
    "no-ignore-case initial-tab label= line-buffered line-number line-regexp max-count= "
    "no-filename no-group-separator no-messages null null-data only-matching quiet "
    "silent>quiet recursive dereference-recursive regexp= invert-match text binary "
    f"unix-byte-offsets with-filename word-regexp {_HELP}")

DIFF = OptionTable.of(
    "0123456789abBcC:dD:eEfF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ",
    "binary brief changed-group-format= color? context? ed exclude= exclude-from= "
    "expand-tabs forward-ed from-file= horizon-lines= ifdef= ignore-all-space "
    "ignore-blank-lines ignore-case ignore-file-name-case ignore-matching-lines= "
    "ignore-space-change ignore-tab-expansion ignore-trailing-space inhibit-hunk-merge "
    "initial-tab label= left-column line-format= minimal new-file new-group-format= "
    "new-line-format= no-dereference no-ignore-file-name-case normal old-group-format= "
    "old-line-format= paginate palette= rcs recursive report-identical-files "
    "sdiff-merge-assist show-c-function show-function-line= side-by-side speed-large-files "
    "starting-file= strip-trailing-cr suppress-blank-empty suppress-common-lines tabsize= "
    "text to-file= unchanged-group-format= unchanged-line-format= unidirectional-new-file "
    f"unified? width= -presume-output-tty {_HELP}")

LS = OptionTable.of(
    "1aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ",
    "all almost-all author escape block-size= ignore-backups color? directory dired "
    "classify? file-type format= full-time group-directories-first no-group "
    "human-readable si dereference-command-line dereference-command-line-symlink-to-dir "
    "hide= hyperlink? indicator-style= inode ignore= kibibytes dereference numeric-uid-gid "
    "literal hide-control-chars show-control-chars quote-name quoting-style= reverse "
    f"recursive size sort= time= time-style= tabsize= width= context zero {_HELP}")

DU = OptionTable.of(
    "0abB:cd:DhHklLmPsSt:xX:",
    "all apparent-size block-size= bytes count-links dereference dereference-args "
    "exclude= exclude-from= files0-from= human-readable inodes si max-depth= null "
    "no-dereference one-file-system separate-dirs summarize total threshold= time? "
    f"time-style= {_HELP}")

STAT = OptionTable.of(
    "c:fLt",
    f"dereference file-system format= printf= terse cached= {_HELP}")

# ripgrep's parser takes no abbreviations (every `--no-x` is its own flag), and `-e=x`
# means `-e x`.
RG = OptionTable.of(
    "0.aA:bB:cC:d:e:E:f:Fg:hHiIj:lLm:M:nNopPqr:sSt:T:uUvVwxz",
    "regexp= file= after-context= before-context= binary no-binary block-buffered "
    "no-block-buffered byte-offset no-byte-offset case-sensitive color= colors= column "
    "no-column context= context-separator= no-context-separator count count-matches crlf "
    "no-crlf debug dfa-size-limit= encoding= no-encoding engine= field-context-separator= "
    "field-match-separator= files files-with-matches files-without-match fixed-strings "
    "no-fixed-strings follow no-follow generate= glob= glob-case-insensitive "
    "no-glob-case-insensitive heading no-heading help hidden no-hidden hostname-bin= "
    "hyperlink-format= iglob= ignore-case ignore-file= ignore-file-case-insensitive "
    "no-ignore-file-case-insensitive include-zero no-include-zero invert-match "
    "no-invert-match json no-json line-buffered no-line-buffered line-number "
    "no-line-number line-regexp max-columns= max-columns-preview no-max-columns-preview "
    "max-count= max-depth= max-filesize= mmap no-mmap multiline no-multiline "
    "multiline-dotall no-multiline-dotall no-config no-ignore ignore no-ignore-dot "
    "ignore-dot no-ignore-exclude ignore-exclude no-ignore-files ignore-files "
    "no-ignore-global ignore-global no-ignore-messages ignore-messages no-ignore-parent "
    "ignore-parent no-ignore-vcs ignore-vcs no-messages messages no-require-git "
    "require-git no-unicode unicode null null-data one-file-system no-one-file-system "
    "only-matching path-separator= passthru pcre2 no-pcre2 pcre2-version pre= no-pre "
    "pre-glob= pretty quiet regex-size-limit= replace= search-zip no-search-zip smart-case "
    "sort= sortr= stats no-stats stop-on-nonmatch text no-text threads= trace trim no-trim "
    "type= type-not= type-add= type-clear= type-list unrestricted version vimgrep "
    "with-filename no-filename word-regexp auto-hybrid-regex no-auto-hybrid-regex "
    "no-pcre2-unicode pcre2-unicode sort-files no-sort-files",
    abbreviations=False, equals_strips=True)

_NAME_LIST = frozenset({"--files0-from"})

READERS: dict[str, Reader] = {
    "cat": Reader(CAT),
    "head": Reader(HEAD),
    "tail": Reader(TAIL),
    "wc": Reader(WC, refused=_NAME_LIST),
    "stat": Reader(STAT),
    "grep": Reader(GREP, follows=frozenset({"-R", "--dereference-recursive"}),
                   first_operand_pattern=True,
                   pattern_options=frozenset({"-e", "--regexp", "-f", "--file"}),
                   # any --directories value counts: its argument takes abbreviations too
                   descends=frozenset({"-r", "-R", "--recursive", "--dereference-recursive",
                                       "-d", "--directories"})),
    # diff follows the symlinks it meets while comparing folders unless told not to.
    "diff": Reader(DIFF, follows=frozenset({"-r", "--recursive"}),
                   tree_options=frozenset({"--from-file", "--to-file"}),
                   descends=frozenset({"-r", "--recursive"}), lists=True),
    "find": Reader(None, follows=FIND_FOLLOWS, refused=FIND_REFUSED, always=True),
    "ls": Reader(LS, follows=frozenset({"-L", "--dereference"}),
                 descends=frozenset({"-R", "--recursive"}), lists=True),
    "du": Reader(DU, follows=frozenset({"-L", "--dereference"}), refused=_NAME_LIST, always=True),
    "rg": Reader(RG, follows=frozenset({"-L", "--follow"}),
                 # a preprocessor, a hostname program, decompressors found on PATH
                 refused=frozenset({"--pre", "--hostname-bin", "-z", "--search-zip"}), always=True,
                 first_operand_pattern=True,
                 pattern_options=frozenset({"-e", "--regexp", "-f", "--file", "--files",
                                            "--type-list"})),
}
