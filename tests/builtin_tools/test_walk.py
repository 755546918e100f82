"""The file walker, ignore rules and globs shared by glob, grep and ls."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builtin_tools._files.globs import PathGlob, glob_to_regex
from builtin_tools._files.ignore import IgnoreChecker, IgnoreFile
from builtin_tools._files.rg import RG_WALK_ARGS, RgFilter, find_rg, rg_filter_args
from builtin_tools._files.walk import walk, walk_files

RG = find_rg()
needs_rg = pytest.mark.skipif(RG is None, reason="the rg binary is not installed")


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def rg_files(root: Path, target: str = ".") -> list[str]:
    assert RG is not None
    out = subprocess.run([RG, "--files", *RG_WALK_ARGS, "--null", "--", target], cwd=root,
                         capture_output=True, check=False).stdout
    paths = [os.fsdecode(p) for p in out.split(b"\0") if p]
    prefix = "" if target == "." else target.rstrip("/") + "/"
    return sorted(p.removeprefix("./").removeprefix(prefix) for p in paths)


# A tree exercising most of gitignore: negation, folder-only lines, anchoring, `**`,
# nested files overriding their parents, a nested repository, escapes, trailing spaces.
RICH_GITIGNORE = """\
# comment
*.log
!keep.log
build/
/root_only.txt
docs/*.md
!docs/README.md
**/gen/**
a/**/deep.txt
\\#hash.txt
sp ace.txt  \x20
[ab].tmp
?.q
node_modules
"""

RICH_FILES = [
    "a.log", "keep.log", "src/x.log", "src/keep.log", "src/build/o.txt", "build/b.txt",
    "root_only.txt", "src/root_only.txt", "docs/a.md", "docs/README.md", "docs/sub/b.md",
    "gen/x/f.txt", "src/gen.txt", "a/deep.txt", "a/b/c/deep.txt",
    "a/b/deep.txt", "#hash.txt", "sp ace.txt", "a.tmp", "c.tmp", "x.q", "xx.q",
    "node_modules/m/i.js", "wl/a.py", "wl/b.txt", "wl/sub/c.py", "wl/sub/d.txt",
    "nested/x.log", "nested/in/y.txt", "nested/z.md", ".hidden", ".env", "src/ok.py",
]

RICH_KEPT = sorted([
    ".gitignore", ".env", ".hidden", "c.tmp", "docs/README.md", "docs/sub/b.md", "keep.log",
    "nested/.gitignore", "nested/x.log", "nested/z.md", "src/.gitignore", "src/gen.txt",
    "src/keep.log", "src/ok.py", "src/root_only.txt", "src/x.log", "wl/a.py",
    "wl/sub/c.py", "xx.q",
])


@pytest.fixture
def rich(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {rel: "hi\n" for rel in RICH_FILES})
    write_tree(tmp_path, {
        ".gitignore": RICH_GITIGNORE,
        "wl/.gitignore": "*\n!*/\n!*.py\n",  # the "only python files" idiom
        "nested/.gitignore": "*.txt\n",
        "src/.gitignore": "!x.log\n",  # re-includes what the parent ignores
    })
    (tmp_path / "nested" / ".git").mkdir()  # a nested repository: parent rules stop
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return tmp_path


# --------------------------------------------------------------------------- globs

@pytest.mark.parametrize(("glob", "path", "matches"), [
    ("*.py", "a.py", True),
    ("*.py", "src/a.py", False),  # a raw glob: `*` stops at '/'
    ("**/*.py", "a.py", True),
    ("**/*.py", "src/deep/a.py", True),
    ("src/**", "src/a/b.txt", True),
    ("src/**", "src", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "ab", False),
    ("[ab]?.c", "bx.c", True),
    ("[ab]?.c", "cx.c", False),
    ("[!a]x", "bx", True),
    ("[!a]x", "ax", False),
    ("[!a]x", "/x", False),
    ("*.{ts,tsx}", "a.tsx", True),
    ("*.{ts,tsx}", "a.js", False),
    ("{src,lib}/**/*.rs", "lib/x/y.rs", True),
    ("\\*lit", "*lit", True),
    ("\\*lit", "xlit", False),
    ("a**b", "axxb", True),
    ("a**b", "ax/xb", False),
    ("[unclosed", "[unclosed", True),
    ("x.(y)+", "x.(y)+", True),
])
def test_glob_to_regex(glob: str, path: str, matches: bool) -> None:
    assert (re.fullmatch(glob_to_regex(glob), path) is not None) is matches


def test_path_glob_matches_basenames_without_slash_and_paths_with_one() -> None:
    name = PathGlob.compile("*.py")
    assert name.matches("a.py") and name.matches("deep/er/a.py")
    anchored = PathGlob.compile("src/*.py")
    assert anchored.matches("src/a.py") and not anchored.matches("x/src/a.py")
    assert not anchored.matches("src/sub/a.py")
    leading = PathGlob.compile("/a.py")
    assert leading.matches("a.py") and not leading.matches("x/a.py")
    negated = PathGlob.compile("!*.min.js")
    assert negated.matches("app.js") and not negated.matches("app.min.js")
    assert PathGlob.compile("./src/*.py").matches("src/a.py")


def test_path_glob_prefilter_is_the_file_name_part() -> None:
    assert PathGlob.compile("*.py").rg_prefilter() == "*.py"
    assert PathGlob.compile("src/**/*.{ts,tsx}").rg_prefilter() == "*.{ts,tsx}"
    assert PathGlob.compile("src/**").rg_prefilter() is None
    assert PathGlob.compile("!*.py").rg_prefilter() is None
    assert PathGlob.compile("{a,b/c}.py").rg_prefilter() is None
    assert PathGlob.compile(".hidden*").rg_prefilter() == ".hidden*"


def test_rg_filter_uses_glob_only_for_extensions() -> None:
    assert rg_filter_args(PathGlob.compile("**/*.py")) == RgFilter(
        ("--glob", "*.py"), recheck_ignored=True, exact=True)
    assert rg_filter_args(PathGlob.compile("*.{ts,tsx}")) == RgFilter(
        ("--glob", "*.{ts,tsx}"), recheck_ignored=True, exact=True)
    # `*` would send rg into every ignored folder: a type never does.
    assert rg_filter_args(PathGlob.compile("**/*")) == RgFilter(
        ("--type-add", "loomglob:*", "--type", "loomglob"), exact=True)
    assert rg_filter_args(PathGlob.compile("test_*.py")).recheck_ignored is False
    assert rg_filter_args(PathGlob.compile("src/**")) == RgFilter()


def test_rg_filter_is_exact_only_for_a_file_name_at_any_depth() -> None:
    # A folder part in the glob must still be matched after rg's name filter.
    assert rg_filter_args(PathGlob.compile("src/**/*.py")).exact is False
    assert rg_filter_args(PathGlob.compile("pkg1*/sub/*.md")).exact is False
    assert rg_filter_args(PathGlob.compile("/*.py")).exact is False  # anchored to the top
    assert rg_filter_args(PathGlob.compile("**/test_*.py")).exact is True


def test_empty_glob_is_rejected() -> None:
    with pytest.raises(ValueError, match="empty glob"):
        PathGlob.compile("  ")


# --------------------------------------------------------------------------- ignore files

def test_ignore_file_last_matching_line_wins() -> None:
    rules = IgnoreFile("*.log\n!keep.log\n")
    assert rules.match("a.log", False) is True
    assert rules.match("keep.log", False) is False
    assert rules.match("dir/keep.log", False) is False
    assert rules.match("a.txt", False) is None


def test_ignore_file_folder_only_anchored_and_comments() -> None:
    rules = IgnoreFile("# build/\nbuild/\n/top.txt\ndocs/*.md\n\\#lit\n")
    assert rules.match("build", True) is True
    assert rules.match("build", False) is None  # a file named build is not a folder
    assert rules.match("x/build", True) is True
    assert rules.match("top.txt", False) is True
    assert rules.match("x/top.txt", False) is None
    assert rules.match("docs/a.md", False) is True
    assert rules.match("docs/sub/a.md", False) is None
    assert rules.match("#lit", False) is True


def test_ignore_file_whitelist_idiom_checks_the_entry_not_its_parents() -> None:
    rules = IgnoreFile("*\n!*/\n!*.py\n")
    assert rules.match("src", True) is False
    assert rules.match("src/a.py", False) is False
    assert rules.match("src/a.txt", False) is True


def test_ignore_file_trailing_spaces_and_escaped_space() -> None:
    assert IgnoreFile("a.txt   \n").match("a.txt", False) is True
    assert IgnoreFile("b\\ \n").match("b ", False) is True
    assert IgnoreFile("\n\n# only comments\n").match("x", False) is None


# --------------------------------------------------------------------------- walking

def test_walk_applies_nested_gitignores_negations_and_skips_git(rich: Path) -> None:
    assert walk_files(rich) == RICH_KEPT


def test_walk_does_not_follow_or_list_symlinks_by_default(tmp_path: Path) -> None:
    write_tree(tmp_path, {"real/a.txt": "a", "f.txt": "f"})
    (tmp_path / "link_dir").symlink_to(tmp_path / "real")
    (tmp_path / "link_file.txt").symlink_to(tmp_path / "f.txt")
    assert walk_files(tmp_path) == ["f.txt", "real/a.txt"]
    with_links = sorted((e.rel, e.is_symlink) for e in walk(tmp_path, include_symlinks=True))
    assert with_links == [("f.txt", False), ("link_dir", True), ("link_file.txt", True),
                          ("real/a.txt", False)]


def test_walk_outside_git_ignores_gitignore_like_git_and_rg(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "", "b.txt": ""})
    assert walk_files(tmp_path) == [".gitignore", "a.log", "b.txt"]


def test_walk_from_a_subfolder_uses_the_parents_rules(rich: Path) -> None:
    # The parent's `*.log` and `/root_only.txt` lines, the child's `!x.log`.
    assert walk_files(rich / "src") == [".gitignore", "gen.txt", "keep.log", "ok.py",
                                        "root_only.txt", "x.log"]
    assert walk_files(rich / "wl") == ["a.py", "sub/c.py"]


def test_walk_from_a_subfolder_sees_parent_rules_as_rg_does(rich: Path) -> None:
    # rg 14.1.0 matches a parent's rules against "<searched folder>/<entry name>":
    # docs/sub/b.md is checked as docs/b.md, which the parent's `docs/*.md` ignores.
    assert walk_files(rich / "docs") == ["README.md"]
    write_tree(rich, {"src/gen/y/g.txt": "x"})
    assert "gen/y/g.txt" in walk_files(rich / "src")


def test_walk_started_inside_an_ignored_folder_lists_it(rich: Path) -> None:
    # As with rg: an explicit folder is searched; only rules matching its entries apply.
    write_tree(rich, {"node_modules/m/debug.log": "x"})
    assert walk_files(rich / "node_modules" / "m") == ["i.js"]


def test_walk_include_dirs_and_prune(rich: Path) -> None:
    dirs = sorted(e.rel for e in walk(rich, include_dirs=True) if e.is_dir)
    assert "node_modules" not in dirs and "build" not in dirs and "src" in dirs
    pruned = sorted(e.rel for e in walk(rich, prune=lambda rel, is_dir: rel == "src"))
    assert not any(p.startswith("src/") for p in pruned)


def test_walk_stops_when_cancelled(rich: Path) -> None:
    assert list(walk(rich, cancelled=lambda: True)) == []


def test_walk_skips_unreadable_folders(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every folder")
    write_tree(tmp_path, {"locked/a.txt": "", "b.txt": ""})
    (tmp_path / "locked").chmod(0)
    try:
        assert walk_files(tmp_path) == ["b.txt"]
    finally:
        (tmp_path / "locked").chmod(0o755)


def all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and not p.is_symlink())


def test_ignore_checker_agrees_with_the_walk(rich: Path) -> None:
    checker = IgnoreChecker(rich)
    assert [rel for rel in all_files(rich) if checker.visible(rel)] == RICH_KEPT
    for sub in ("src", "docs", "node_modules/m"):
        sub_checker = IgnoreChecker(rich / sub)
        assert [rel for rel in all_files(rich / sub) if sub_checker.visible(rel)] == walk_files(rich / sub)


def test_ignore_checker_rejects_files_inside_ignored_folders(tmp_path: Path) -> None:
    # What rg's --glob lets through: a folder whose name matches the glob is entered
    # even when ignored, and a matching file is listed even when ignored.
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {".gitignore": "x.py/\ndebug.py\n", "x.py/a.py": "", "debug.py": "",
                          "ok.py": ""})
    checker = IgnoreChecker(tmp_path)
    assert [checker.visible(p) for p in ("x.py/a.py", "debug.py", "ok.py", ".git/config")] == [
        False, False, True, False]


# --------------------------------------------------------------------------- same files as rg

@needs_rg
def test_find_rg_finds_the_wheel_binary() -> None:
    assert RG is not None and os.access(RG, os.X_OK)
    version = subprocess.run([RG, "--version"], capture_output=True, text=True).stdout
    assert version.startswith("ripgrep ")


@needs_rg
def test_walk_equals_rg_files_on_the_rich_tree(rich: Path) -> None:
    (rich / "link.py").symlink_to(rich / "src" / "ok.py")
    os.mkfifo(rich / "fifo")
    assert walk_files(rich) == rg_files(rich) == RICH_KEPT


@needs_rg
@pytest.mark.parametrize("sub", ["src", "docs", "wl", "nested", "node_modules/m", "a/b"])
def test_walk_equals_rg_files_from_subfolders(rich: Path, sub: str) -> None:
    assert walk_files(rich / sub) == rg_files(rich / sub)


@needs_rg
def test_walk_equals_rg_outside_git(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "*.log\n", "a.log": "", "b/c.txt": ""})
    assert walk_files(tmp_path) == rg_files(tmp_path)


_LINES = st.sampled_from([
    "*.log", "!keep.log", "build/", "/top.txt", "src/*.py", "!src/keep.py", "**/gen/**",
    "*", "!*/", "!*.py", "docs/", "!docs/", "a/**/b.txt", "*.tmp", "!x.tmp", "?.q", "[ab].c",
    "src/", "!/src/", "deep/", "**/deep", "# comment", "", "*.txt", "!src/*.txt",
    "src/*.txt", "a/x/", "deep/*/z.py", "/src/sub/", "sub/top.txt", "**/x/**",
])
_TREE = ["a.log", "keep.log", "top.txt", "src/top.txt", "src/a.py", "src/keep.py",
         "src/notes.txt", "src/gen/x.py", "gen/y.txt", "build/o.py", "docs/d.md",
         "a/b.txt", "a/x/b.txt", "a/x/y/b.txt", "x.tmp", "y.tmp", "k.q", "a.c", "c.c",
         "deep/deep/z.py", "deep/src/a.py", "src/deep/w.txt", "src/build/q.txt",
         "src/sub/src/keep.py", "src/sub/top.txt"]


@needs_rg
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root_lines=st.lists(_LINES, max_size=6), src_lines=st.lists(_LINES, max_size=3))
def test_walk_equals_rg_for_generated_gitignores(tmp_path: Path, root_lines: list[str],
                                                 src_lines: list[str]) -> None:
    (tmp_path / ".git").mkdir(exist_ok=True)
    write_tree(tmp_path, {rel: "x" for rel in _TREE})
    (tmp_path / ".gitignore").write_text("\n".join(root_lines) + "\n")
    (tmp_path / "src" / ".gitignore").write_text("\n".join(src_lines) + "\n")
    assert walk_files(tmp_path) == rg_files(tmp_path)
    checker = IgnoreChecker(tmp_path)
    assert [rel for rel in all_files(tmp_path) if checker.visible(rel)] == walk_files(tmp_path)
    for sub in ("src", "deep", "a"):
        assert walk_files(tmp_path / sub) == rg_files(tmp_path / sub), sub
