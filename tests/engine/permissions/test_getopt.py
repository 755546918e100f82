"""Options read the way the program's parser reads them (getopt_long, ripgrep, find)."""

from __future__ import annotations

import pytest

from loom_engine.permissions.find_args import parse_find
from loom_engine.permissions.getopt import (
    Given,
    OptionTable,
    ParsedArguments,
    could_abbreviate,
    parse_arguments,
    resolve_long,
)
from loom_engine.permissions.option_tables import CAT, DIFF, GREP, LS, RG


def key(table: OptionTable, written: str) -> str | None:
    option = resolve_long(table, written).option
    return option.key if option else None


def test_the_table_notation() -> None:
    table = OptionTable.of("ab:c::", "all block-size= color? colour?>color")
    assert table.short == {"a": "none", "b": "required", "c": "optional"}
    assert [(o.name, o.key, o.arity) for o in table.long] == [
        ("all", "--all", "none"), ("block-size", "--block-size", "required"),
        ("color", "--color", "optional"), ("colour", "--color", "optional")]


def test_an_abbreviation_resolves_to_the_one_option_it_prefixes() -> None:
    assert key(GREP, "deref") == "--dereference-recursive"
    assert key(GREP, "dereference-rec") == "--dereference-recursive"
    assert key(DIFF, "recu") == "--recursive"


def test_an_exact_name_wins_over_longer_ones() -> None:
    assert key(GREP, "binary") == "--binary"  # also a prefix of --binary-files
    assert key(CAT, "number") == "--number"   # also a prefix of --number-nonblank
    assert key(LS, "dereference") == "--dereference"


def test_an_ambiguous_or_unknown_abbreviation_is_a_doubt_naming_why() -> None:
    ambiguous = resolve_long(CAT, "nu")
    assert ambiguous.option is None
    assert ambiguous.doubt == "'--nu' is ambiguous (--number-nonblank, --number)"
    assert "not an option" in resolve_long(GREP, "zz").doubt
    assert resolve_long(GREP, "").option is None  # `--=x`: a prefix of every option
    assert resolve_long(LS, "deref").option is None  # --dereference, --dereference-command-line...


def test_aliases_of_one_option_are_not_ambiguous() -> None:
    assert key(GREP, "col") == "--color"    # --color and --colour
    assert key(GREP, "fixed") == "--fixed-strings"  # --fixed-regexp and --fixed-strings


def test_a_parser_without_abbreviations_takes_whole_names_only() -> None:
    assert key(RG, "follow") == "--follow"
    assert key(RG, "fol") is None
    assert key(RG, "no-follow") == "--no-follow"


def parse(table: OptionTable, line: str) -> ParsedArguments:
    return parse_arguments(table, line.split())


def test_values_glued_after_equals_in_the_next_word_or_to_the_letter() -> None:
    assert parse(GREP, "--file=p x").given == (Given("--file", "p", 0),)
    assert parse(GREP, "--file p x").given == (Given("--file", "p", 1),)
    assert parse(GREP, "--exclude-f p x").given == (Given("--exclude-from", "p", 1),)
    assert parse(GREP, "-fp x").given == (Given("-f", "p", 0),)
    assert parse(GREP, "-f p x").given == (Given("-f", "p", 1),)
    assert parse(GREP, "-nf p x").given == (Given("-n"), Given("-f", "p", 1))
    assert parse(GREP, "-e=x .").given == (Given("-e", "=x", 0),)  # GNU keeps the '='
    assert parse(RG, "-e=x .").given == (Given("-e", "x", 0),)     # lexopt drops it


def test_a_value_is_taken_even_when_it_looks_like_an_option() -> None:
    parsed = parse(GREP, "-e -R x")
    assert parsed.given == (Given("-e", "-R", 1),)
    assert parsed.operands == ((2, "x"),)


def test_an_optional_value_is_only_ever_glued() -> None:
    parsed = parse(GREP, "--color x .")
    assert parsed.given == (Given("--color"),)
    assert parsed.operands == ((1, "x"), (2, "."))
    assert parse(GREP, "--colo=always x").given == (Given("--color", "always", 0),)


def test_clusters_are_read_letter_by_letter() -> None:
    assert parse(DIFF, "-rN a b").keys() == {"-r", "-N"}
    assert parse(DIFF, "-Nr a b").keys() == {"-r", "-N"}
    assert parse(GREP, "-A3 x").given == (Given("-A", "3", 0),)


def test_options_after_operands_are_options_and_also_read_as_file_names() -> None:
    parsed = parse(GREP, "x . --deref")
    assert parsed.keys() == {"--dereference-recursive"}
    assert parsed.operands == ((0, "x"), (1, "."))
    assert parsed.late_options == ((2, "--deref"),)  # an operand under POSIXLY_CORRECT


def test_a_double_dash_ends_the_options() -> None:
    parsed = parse(GREP, "x -- --deref -R")
    assert parsed.given == ()
    assert parsed.operands == ((0, "x"), (2, "--deref"), (3, "-R"))
    assert parse(GREP, "- x").operands == ((0, "-"), (1, "x"))  # '-' is standard input


@pytest.mark.parametrize("line, why", [
    ("--count=3 x", "'--count' takes no value"),
    ("-Y x", "'-Y' is not an option this check knows"),
    ("x -A", "'-A' needs a value"),
    ("x --after", "'--after-context' needs a value"),
    ("--d x", "'--d' is ambiguous"),
])
def test_what_the_program_would_reject_is_a_doubt(line: str, why: str) -> None:
    assert parse(GREP, line).doubt.startswith(why)


def test_could_abbreviate_is_for_parsers_without_a_table() -> None:
    assert could_abbreviate("outp=x", ("output", "ext-diff"))
    assert could_abbreviate("ext", ("output", "ext-diff"))
    assert not could_abbreviate("output-indicator-new=x", ("output",))
    assert not could_abbreviate("no-ext-diff", ("output", "ext-diff"))
    assert not could_abbreviate("=x", ("output",))


# -- find ---------------------------------------------------------------------------


def test_find_leading_options_starting_points_and_primaries() -> None:
    parsed = parse_find("-L -D tree -O3 src docs -name *.py -newermt 2020-01-01 -print".split())
    assert parsed.doubt == ""
    assert {"-L", "-D", "-O", "-name", "-newermt", "-print"} == parsed.keys()
    assert parsed.operands == ((4, "src"), (5, "docs"))
    assert dict(parsed.values()) == {2: "tree", 7: "*.py", 9: "2020-01-01"}


def test_find_operators_and_double_dash() -> None:
    parsed = parse_find("-- . ( -name a -o ! -type d ) , -print".split())
    assert parsed.doubt == "" and parsed.operands == ((1, "."),)


@pytest.mark.parametrize("line, why", [
    (". -fol", "'-fol' is not a find primary"),       # no abbreviations
    ("src -L", "'-L' is not a find primary"),         # -L only leads
    (". -name", "'-name' needs a value"),
    (". -name x y", "find: 'y' would be a path after the expression"),
    (". -exec rm {} ;", "'-exec' writes, runs"),
    ("-files0-from list", "'-files0-from' writes, runs or reads a list of names"),
])
def test_find_doubts(line: str, why: str) -> None:
    assert parse_find(line.split()).doubt.startswith(why)
