"""apply_patch against Codex's own test corpus (../shared/conformance/apply_patch).

Each scenario copies input/ to a temp folder, applies patch.txt there and compares the
resulting tree with expected/ byte for byte. Loom's apply_patch is all or nothing and
keeps context lines as the file has them; the few cases where Codex's recorded
behaviour differs from that assert Loom's behaviour instead, each with a comment.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from builtin_tools._patch_format import (
    AddFile,
    DeleteFile,
    Hunk,
    PatchError,
    PatchParseError,
    UpdateFile,
    parse_patch,
)
from builtin_tools.apply_patch import apply_patch_text
from tests.conformance import conformance_dir, require

CORPUS = conformance_dir("apply_patch")
require(CORPUS)


def _load(name: str) -> list[dict[str, Any]]:
    return json.loads((CORPUS / name).read_text(encoding="utf-8"))


SCENARIOS = sorted(p.name for p in (CORPUS / "scenarios").iterdir()) if CORPUS.is_dir() else []
CLI_CASES = _load("cli_cases.json")
PARSE_CASES = _load("parse_cases.json")


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every folder (as ``name/``) and file (with its bytes) under ``root``."""
    tree: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            tree[rel + "/"] = None
        else:
            tree[rel] = path.read_bytes()
    return tree


def apply(patch: str, cwd: Path) -> tuple[bool, str]:
    try:
        return True, apply_patch_text(patch, cwd)
    except PatchError as error:
        return False, str(error)


def test_the_corpus_is_complete() -> None:
    assert len(SCENARIOS) == 25 and len(CLI_CASES) == 32 and len(PARSE_CASES) == 26


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario(name: str, tmp_path: Path) -> None:
    scenario = CORPUS / "scenarios" / name
    work = tmp_path / "work"
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", work)
    else:
        work.mkdir()
    before = snapshot(work)
    patch = (scenario / "patch.txt").read_bytes().decode("utf-8")
    ok, message = apply(patch, work)
    if name == "015_failure_after_partial_success_leaves_changes":
        # Codex keeps created.txt, added before the failing hunk; Loom checks every hunk
        # before writing anything, so the tree is left exactly as it was.
        assert not ok and "missing.txt" in message
        assert snapshot(work) == before == {}
        return
    assert snapshot(work) == snapshot(scenario / "expected")


# cli_cases.json cases where Loom deliberately differs, and what Loom leaves instead.
LOOM_OUTCOMES: dict[str, dict[str, str]] = {
    # All or nothing: the file added before the failing hunk is not kept.
    "cli_failure_after_partial_success_leaves_changes": {},
    # A context line that matched only by ignoring whitespace keeps the file's own text
    # (Codex rewrites it with the patch's, losing trailing spaces and indentation).
    "lib_trailing_whitespace_fuzzy": {"ws.txt": "foo   \nBAR\n"},
    "lib_leading_trailing_whitespace_fuzzy": {"ws.txt": "    foo   \nBAR\n"},
}
LOOM_ABSENT = {"cli_failure_after_partial_success_leaves_changes": ["created.txt"]}


@pytest.mark.parametrize("case", CLI_CASES, ids=[c["name"] for c in CLI_CASES])
def test_cli_case(case: dict[str, Any], tmp_path: Path) -> None:
    for rel, content in case["input"].items():
        path = tmp_path / rel
        if content is None or rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
    ok, message = apply(case["patch"], tmp_path)
    assert ok == (case["exit"] == "success"), message
    expected = LOOM_OUTCOMES.get(case["name"], case["expected"])
    for rel, content in expected.items():
        assert (tmp_path / rel).read_bytes() == content.encode("utf-8"), rel
    for rel in case.get("absent", []) + LOOM_ABSENT.get(case["name"], []):
        assert not (tmp_path / rel).exists(), rel
    if ok and "stdout" in case:
        # Loom's summary has the same shape as Codex's, which the models know.
        assert message == case["stdout"]


def hunk_as_dict(hunk: Hunk) -> dict[str, Any]:
    if isinstance(hunk, AddFile):
        return {"type": "add", "path": hunk.path, "contents": hunk.contents}
    if isinstance(hunk, DeleteFile):
        return {"type": "delete", "path": hunk.path}
    assert isinstance(hunk, UpdateFile)
    return {"type": "update", "path": hunk.path, "move_path": hunk.move_path,
            "chunks": [{"change_context": c.change_context, "old_lines": list(c.old_lines),
                        "new_lines": list(c.new_lines), "is_end_of_file": c.is_end_of_file}
                       for c in hunk.chunks]}


@pytest.mark.parametrize("case", PARSE_CASES, ids=[c["name"] for c in PARSE_CASES])
def test_parse_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(PatchParseError) as caught:
            parse_patch(case["patch"], case["mode"])
        error = case["error"]
        assert caught.value.kind == error["kind"]
        assert caught.value.message == error["message"]
        if "line_number" in error:
            assert caught.value.line_number == error["line_number"]
        if "cli_stderr" in case:
            assert str(caught.value) + "\n" == case["cli_stderr"]
        return
    assert [hunk_as_dict(h) for h in parse_patch(case["patch"], case["mode"])] == case["hunks"]
