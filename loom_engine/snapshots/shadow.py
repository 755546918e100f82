"""The shadow repository: Loom's own git directory for one workspace's snapshots.

It lives under Loom's data dir (``<data>/snapshots/<hash of the workspace's real
path>``) and uses the workspace as its work tree, through the system ``git`` binary.
The user's ``.git`` is never opened — not its index, refs, stash, config or hooks —
with one exception: ``.git/info/exclude`` is read (passed as the excludes file) so that
what the user ignores is not snapshotted.

The workspace may be hostile, so nothing of it may run or transform content:
every call gets a scrubbed environment (no inherited ``GIT_*``, no system or global
config, no hooks, no fsmonitor) and the shadow repository's ``info/attributes`` unsets
every attribute that could filter, convert line endings or run a driver, whatever the
workspace's ``.gitattributes`` say. Contents are read back raw (``cat-file``), never
through checkout.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..private_files import private_folder, write_private

# The signals a terminal sends its whole foreground group (Ctrl-C, Ctrl-\, Ctrl-Z).
_TERMINAL_SIGNALS = frozenset({signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP})

# Attributes that could change bytes on the way in or out, or name a driver to run.
# info/attributes outranks every .gitattributes in the work tree.
NEUTRAL_ATTRIBUTES = ("* -text -eol -crlf -ident -filter -diff -merge -working-tree-encoding "
                      "-export-subst -delta\n")

# Settings given on every call (command-line scope, which outranks any config file).
_SETTINGS = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("core.attributesFile", os.devnull),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.ignoreCase", "false"),
    ("core.precomposeUnicode", "false"),
    ("core.quotePath", "false"),
    ("core.splitIndex", "false"),
    ("core.sparseCheckout", "false"),
    ("core.untrackedCache", "true"),
    ("index.sparse", "false"),
    ("safe.directory", "*"),
    ("gc.auto", "0"),
    ("core.sharedRepository", "0600"),  # copies of the user's files: theirs alone, whatever the umask
    ("maintenance.auto", "false"),
    ("commit.gpgSign", "false"),
    ("protocol.allow", "never"),
    ("user.name", "loom"),
    ("user.email", "loom@localhost"),
)


class ShadowError(Exception):
    """A git call of the shadow repository failed, with git's message."""


class GitUnavailable(ShadowError):
    """No usable ``git`` binary."""


@dataclass(frozen=True)
class TreeEntry:
    """One file of a snapshot: git mode (``100644``, ``100755``, ``120000``), blob id, size."""

    path: str
    mode: str
    blob: str
    size: int


@dataclass(frozen=True)
class Changed:
    """A path that differs between two snapshots: ``A`` added, ``D`` deleted, ``M`` modified
    (content or mode), seen from the first to the second."""

    path: str
    status: str


def find_git() -> str | None:
    """The system git binary, or None."""
    return shutil.which("git")


def shadow_dir(root: Path, workspace: Path) -> Path:
    """Where the shadow repository of ``workspace`` lives under ``root`` (``<data>/snapshots``)."""
    real = os.path.realpath(workspace)
    return root / hashlib.sha256(os.fsencode(real)).hexdigest()[:20]


def user_excludes_file(workspace: Path) -> str:
    """The user's ``.git/info/exclude`` (read only), or the null device."""
    dot_git = workspace / ".git"
    try:
        if dot_git.is_file():  # a linked worktree or submodule: "gitdir: <path>"
            line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if not line.startswith("gitdir:"):
                return os.devnull
            git_dir = (workspace / line.removeprefix("gitdir:").strip()).resolve()
            common = git_dir / "commondir"
            if common.is_file():
                git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
            dot_git = git_dir
        exclude = dot_git / "info" / "exclude"
        return str(exclude) if exclude.is_file() else os.devnull
    except OSError:
        return os.devnull


class ShadowRepo:
    """Plumbing on the shadow repository; every method runs git synchronously."""

    def __init__(self, workspace: Path, git_dir: Path, *, git: str | None = None,
                 exclude: Sequence[Path] = ()) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.git_dir = git_dir
        # Loom's own folders, never snapshotted when they are inside the workspace (a
        # data dir there would otherwise snapshot its sessions and these snapshots).
        self.exclude = (git_dir.parent, *exclude)
        binary = git or find_git()
        if binary is None:
            raise GitUnavailable("git is not installed")
        self.git = binary
        self._env = self._environment()

    # --- set-up -----------------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        settings = (*_SETTINGS, ("core.excludesFile", user_excludes_file(self.workspace)))
        env.update(GIT_DIR=str(self.git_dir), GIT_WORK_TREE=str(self.workspace),
                   GIT_INDEX_FILE=str(self.git_dir / "index"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
                   GIT_LITERAL_PATHSPECS="1", GIT_NO_REPLACE_OBJECTS="1", GIT_ADVICE="0",
                   GIT_CEILING_DIRECTORIES=str(self.git_dir.parent), LC_ALL="C", LANGUAGE="C",
                   GIT_CONFIG_COUNT=str(len(settings)))
        for number, (key, value) in enumerate(settings):
            env[f"GIT_CONFIG_KEY_{number}"] = key
            env[f"GIT_CONFIG_VALUE_{number}"] = value
        return env

    def ensure(self) -> None:
        """Create the repository if it does not exist yet (no template: no sample hooks).
        Call it holding the workspace's snapshot lock."""
        # Left by a git killed mid-write (Loom killed mid-snapshot); the caller holds the
        # workspace's snapshot lock, so no other Loom is writing.
        (self.git_dir / "index.lock").unlink(missing_ok=True)
        if (self.git_dir / "HEAD").is_file():
            self._write_attributes()
            return
        private_folder(self.git_dir)  # copies of the user's files
        empty_template = self.git_dir / ".no-template"
        empty_template.mkdir(exist_ok=True)
        self.run(["init", "-q", f"--template={empty_template}"], cwd=self.git_dir)
        empty_template.rmdir()
        self._write_attributes()

    def _write_attributes(self) -> None:
        info = self.git_dir / "info"
        for name, text in (("attributes", NEUTRAL_ATTRIBUTES), ("exclude", self._own_folders())):
            path = info / name
            try:
                if path.read_text(encoding="utf-8") == text:
                    continue
            except OSError:
                pass
            private_folder(info)
            write_private(path, text)

    def _own_folders(self) -> str:
        """Exclude patterns for Loom's folders inside the workspace (anchored, escaped)."""
        lines = []
        for folder in self.exclude:
            real = os.path.realpath(folder)
            if real.startswith(str(self.workspace) + os.sep):
                relative = os.path.relpath(real, self.workspace)
                escaped = "".join("\\" + c if c in "*?[]\\!# " else c for c in relative)
                lines.append(f"/{escaped}/\n")
        return "".join(lines)

    # --- running git ------------------------------------------------------------------

    def run(self, args: Sequence[str], *, stdin: bytes | None = None, cwd: Path | None = None,
            check: bool = True) -> bytes:
        """git's standard output; :class:`ShadowError` with its message when it fails."""
        # Its own process group: a Ctrl-C at the terminal interrupts the model, not a
        # snapshot being taken (git killed by it failed the snapshot of the files). A
        # signal landing between fork and the child's setpgid still reaches it, after
        # Python has reset the child's handlers to the defaults, and kills it ("git
        # ls-files failed: -2"). Blocked in this thread across the spawn, such a signal
        # stays pending in git, which by then is out of the group and never takes it.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _TERMINAL_SIGNALS)
        try:
            done = subprocess.run([self.git, *args], input=stdin, cwd=cwd or self.workspace, env=self._env,
                                  capture_output=True, check=False, process_group=0)
        except OSError as error:
            raise GitUnavailable(f"git cannot be run: {error.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ShadowError(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
        return done.stdout

    # --- the index and trees ----------------------------------------------------------

    def candidates(self) -> tuple[set[str], set[str]]:
        """(paths to look at: changed, deleted or not yet in the index; the index's paths
        that are gone or changed). Ignored files are never listed; a nested repository
        (listed as ``dir/``) is skipped."""
        out = self.run(["ls-files", "-z", "-t", "-m", "-d", "-o", "--exclude-standard"])
        look: set[str] = set()
        tracked: set[str] = set()
        for item in out.split(b"\0"):
            if len(item) < 3:
                continue
            tag, path = item[:1], os.fsdecode(item[2:])
            if path.endswith("/"):
                continue
            look.add(path)
            if tag != b"?":
                tracked.add(path)
        return look, tracked

    def update_index(self, add: Iterable[str], remove: Iterable[str]) -> None:
        adds = b"".join(os.fsencode(p) + b"\0" for p in add)
        removes = b"".join(os.fsencode(p) + b"\0" for p in remove)
        if removes:
            self.run(["update-index", "-z", "--force-remove", "--stdin"], stdin=removes)
        if not adds:
            return
        try:
            # Every blob straight into one pack (bulk check-in): 10,000 loose object
            # files would take seconds to write and ten times the space.
            self.run(["-c", "core.bigFileThreshold=1", "add", "--pathspec-from-file=-", "--pathspec-file-nul"],
                     stdin=adds)
        except ShadowError:  # a file went away meanwhile: one by one, missing ones dropped
            self.run(["update-index", "-z", "--add", "--remove", "--stdin"], stdin=adds)

    def write_tree(self) -> str:
        return self.run(["write-tree"]).decode().strip()

    def keep(self, tree: str) -> None:
        """Keep ``tree`` from being pruned (a ref per kept tree)."""
        self.run(["update-ref", f"refs/loom/trees/{tree}", tree])

    def drop(self, trees: Iterable[str]) -> None:
        lines = "".join(f"delete refs/loom/trees/{t}\n" for t in trees)
        if lines:
            self.run(["update-ref", "--stdin"], stdin=lines.encode())

    def prune(self) -> None:
        """Delete what no kept tree reaches."""
        self.run(["reflog", "expire", "--expire=now", "--all"], check=False)
        self.run(["prune", "--expire=now"], check=False)
        self.run(["repack", "-a", "-d", "-q"], check=False)

    def tree_entries(self, tree: str, paths: Iterable[str] | None = None) -> dict[str, TreeEntry]:
        """The files of ``tree`` (only ``paths`` when given), with their sizes."""
        wanted = list(paths) if paths is not None else None
        if wanted == []:
            return {}
        args = ["ls-tree", "-r", "-z", "-l", "--full-tree", tree]
        if wanted is not None:
            args += ["--", *wanted]
        entries: dict[str, TreeEntry] = {}
        for item in self.run(args).split(b"\0"):
            if not item:
                continue
            info, _, raw_path = item.partition(b"\t")
            mode, kind, blob, size = info.split()
            if kind != b"blob":
                continue
            path = os.fsdecode(raw_path)
            entries[path] = TreeEntry(path, mode.decode(), blob.decode(), int(size) if size.isdigit() else 0)
        return entries

    def diff(self, old: str, new: str) -> list[Changed]:
        """Paths that differ between two trees (no rename detection)."""
        if old == new:
            return []
        out = self.run(["diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", old, new])
        fields = out.split(b"\0")
        changes: list[Changed] = []
        # "-z" output: ":<modes> <ids> <status>\0<path>\0" per change.
        for index in range(0, len(fields) - 1, 2):
            head = fields[index]
            if not head.startswith(b":"):
                continue
            status = head.split()[-1].decode()[:1]
            changes.append(Changed(os.fsdecode(fields[index + 1]), "M" if status == "T" else status))
        return changes

    def diff_many(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Changed]]:
        """:meth:`diff` of many pairs of trees in one git call (equal pairs: no change)."""
        wanted = list(dict.fromkeys((a, b) for a, b in pairs if a != b))
        found: dict[tuple[str, str], list[Changed]] = {pair: [] for pair in wanted}
        if not wanted:
            return found
        out = self.run(["diff-tree", "--stdin", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"],
                       stdin="".join(f"{a} {b}\n" for a, b in wanted).encode())
        # Each pair's output: "<a> <b>\n", then ":<modes> <ids> <status>\0<path>\0" per change.
        current: list[Changed] | None = None
        tokens = out.split(b"\0")
        index = 0
        while index < len(tokens):
            token = tokens[index]
            index += 1
            if not token.startswith(b":"):
                header, _, rest = token.partition(b"\n")
                names = header.decode(errors="replace").split()
                current = found.get((names[0], names[1])) if len(names) == 2 else None
                if not rest.startswith(b":"):
                    continue
                token = rest
            if index >= len(tokens):
                break
            path = tokens[index]
            index += 1
            if current is not None:
                status = token.split()[-1].decode()[:1]
                current.append(Changed(os.fsdecode(path), "M" if status == "T" else status))
        return found

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The raw contents of blobs, no filter or conversion applied."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        out = self.run(["cat-file", "--batch"], stdin="".join(f"{b}\n" for b in wanted).encode())
        contents: dict[str, bytes] = {}
        position = 0
        for blob in wanted:
            end = out.index(b"\n", position)
            header = out[position:end].split()
            size = int(header[2]) if len(header) == 3 else 0
            contents[blob] = out[end + 1:end + 1 + size]
            position = end + 1 + size + 1
        return contents

    def empty_tree(self) -> str:
        return self.run(["hash-object", "-t", "tree", "-w", "--stdin"], stdin=b"").decode().strip()

    def size_bytes(self) -> int:
        """How much disk the repository takes."""
        total = 0
        for folder, _, files in os.walk(self.git_dir):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
        return total
