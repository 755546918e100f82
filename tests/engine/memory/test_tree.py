"""The agent tree's in-process stores: versions, stale refusals, paths, limits, secrets,
and which scopes each agent of a tree holds."""

from __future__ import annotations

import re

import pytest

from loom_engine.memory.entries import MemoryOperationError, MemoryStore, ReadOnlyScope, Scope, StaleVersion
from loom_engine.memory.tree import FrozenStore, TreeMemory, TreeStore
from loom_engine.memory.tree_paths import TreeLimits
from loom_engine.redact import Redactor

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def test_each_write_gets_a_new_version_and_a_stale_one_is_refused_with_the_current_entry() -> None:
    store = TreeStore(Scope.SHARED)
    first = store.put("notes/a.md", "one", expected=None)
    second = store.put("notes/a.md", "two", expected=first.version)
    assert second.version != first.version and store.get("notes/a.md") == second
    with pytest.raises(StaleVersion) as refused:
        store.put("notes/a.md", "three", expected=first.version)
    assert refused.value.current == second
    assert "was changed by another agent" in str(refused.value)
    assert store.get("notes/a.md") == second  # the refused write left nothing behind


def test_create_refuses_an_existing_entry_and_an_edit_refuses_a_missing_one() -> None:
    store = TreeStore(Scope.LOCAL)
    made = store.put("a.md", "x", expected=None)
    with pytest.raises(StaleVersion) as exists:
        store.put("a.md", "y", expected=None)
    assert exists.value.current == made
    store.delete("a.md", expected=made.version)
    with pytest.raises(StaleVersion) as gone:
        store.put("a.md", "z", expected=made.version)
    assert gone.value.current is None and "was deleted" in str(gone.value)


def test_a_version_is_never_reused_after_delete_and_create() -> None:
    store = TreeStore(Scope.SHARED)
    old = store.put("a.md", "first", expected=None)
    store.delete("a.md", expected=old.version)
    again = store.put("a.md", "first", expected=None)
    # A writer still holding the first version must not overwrite the new entry.
    assert again.version != old.version
    with pytest.raises(StaleVersion):
        store.put("a.md", "clobber", expected=old.version)
    with pytest.raises(StaleVersion):
        store.delete("a.md", expected=old.version)


def test_delete_and_rename_check_the_version() -> None:
    store = TreeStore(Scope.SHARED)
    entry = store.put("a.md", "x", expected=None)
    newer = store.put("a.md", "y", expected=entry.version)
    with pytest.raises(StaleVersion) as stale:
        store.rename("a.md", "b.md", expected=entry.version)
    assert stale.value.current == newer
    moved = store.rename("a.md", "b/c.md", expected=newer.version)
    assert (moved.path, moved.content) == ("b/c.md", "y") and moved.version != newer.version
    assert store.get("a.md") is None and [e.path for e in store.list()] == ["b/c.md"]
    other = store.put("d.md", "z", expected=None)
    with pytest.raises(MemoryOperationError, match=r"b/c\.md already exists"):
        store.rename("d.md", "b/c.md", expected=other.version)


def test_list_is_sorted_and_confined_to_the_folder() -> None:
    store = TreeStore(Scope.LOCAL)
    for path in ("z.md", "notes/b.md", "notes/a.md", "notesx.md", "notes/deep/c.md"):
        store.put(path, path, expected=None)
    assert [e.path for e in store.list()] == ["notes/a.md", "notes/b.md", "notes/deep/c.md", "notesx.md", "z.md"]
    assert [e.path for e in store.list("notes")] == ["notes/a.md", "notes/b.md", "notes/deep/c.md"]
    assert [e.path for e in store.list("notes/")] == ["notes/a.md", "notes/b.md", "notes/deep/c.md"]
    assert store.list("nothing") == []


@pytest.mark.parametrize(("path", "cause"), [
    ("", "a memory path is needed"),
    ("/etc/passwd", "must be relative"),
    ("../outside.md", "'..' part"),
    ("notes/../../x.md", "'..' part"),
    ("./a.md", "'.' part"),
    ("a//b.md", "an empty part"),
    ("a/", "an empty part"),
    ("a\\b.md", "backslash"),
    ("a\x00b.md", "control character"),
    ("a\nb.md", "control character"),
    ("x" * 201, "the limit is 200"),
])
def test_bad_paths_are_refused_with_one_line_naming_the_cause(path: str, cause: str) -> None:
    store = TreeStore(Scope.SHARED)
    for attempt in (lambda: store.put(path, "x", expected=None), lambda: store.get(path)):
        with pytest.raises(MemoryOperationError) as refused:
            attempt()
        message = str(refused.value)
        assert cause in message and "\n" not in message
    assert store.list() == []


def test_an_entry_cannot_also_be_a_folder() -> None:
    store = TreeStore(Scope.SHARED)
    store.put("notes", "a file", expected=None)
    with pytest.raises(MemoryOperationError, match="notes is an entry"):
        store.put("notes/a.md", "x", expected=None)
    store.put("dir/a.md", "x", expected=None)
    with pytest.raises(MemoryOperationError, match="dir is a folder"):
        store.put("dir", "x", expected=None)


def test_sizes_are_bounded() -> None:
    store = TreeStore(Scope.SHARED, limits=TreeLimits(max_entry_bytes=10, max_entries=2, max_total_bytes=15))
    with pytest.raises(MemoryOperationError, match="would hold 11 bytes; an entry holds at most 10"):
        store.put("a.md", "x" * 11, expected=None)
    with pytest.raises(MemoryOperationError, match="at most 10"):
        store.put("a.md", "é" * 6, expected=None)  # bytes, not characters
    a = store.put("a.md", "x" * 10, expected=None)
    with pytest.raises(MemoryOperationError, match="full"):
        store.put("b.md", "x" * 6, expected=None)
    store.put("b.md", "x" * 5, expected=None)
    with pytest.raises(MemoryOperationError, match="limit of 2 entries"):
        store.put("c.md", "", expected=None)
    # Shrinking an entry frees its room; rewriting one in place needs no new slot.
    store.put("a.md", "x", expected=a.version)
    b = store.get("b.md")
    assert b is not None and store.put("b.md", "y" * 10, expected=b.version).content == "y" * 10


def test_secrets_are_redacted_before_they_are_stored() -> None:
    known = "loom-test-secret-value-0123456789"
    store = TreeStore(Scope.SHARED, redact=Redactor.for_values([known]).redact)
    entry = store.put("creds.md", f"aws {AWS_KEY}\nour key is {known}\n", expected=None)
    assert AWS_KEY not in entry.content and known not in entry.content
    assert "[REDACTED" in entry.content
    assert store.get("creds.md") == entry  # what is kept is the redacted text
    with pytest.raises(MemoryOperationError, match="looks like it holds a secret"):
        store.put(f"{AWS_KEY}.md", "x", expected=None)


def test_the_default_redaction_knows_the_shapes() -> None:
    entry = TreeStore(Scope.LOCAL).put("a.md", f"key={AWS_KEY}", expected=None)
    assert AWS_KEY not in entry.content


def test_a_frozen_store_reads_and_refuses_every_write() -> None:
    source = TreeStore(Scope.LOCAL)
    entry = source.put("plan.md", "the plan", expected=None)
    frozen = FrozenStore(Scope.INHERITED, source.snapshot())
    source.put("plan.md", "changed later", expected=entry.version)
    assert frozen.get("plan.md") == entry and not frozen.writable
    for write in (lambda: frozen.put("plan.md", "x", expected=entry.version),
                  lambda: frozen.put("new.md", "x", expected=None),
                  lambda: frozen.delete("plan.md", expected=entry.version),
                  lambda: frozen.rename("plan.md", "b.md", expected=entry.version)):
        with pytest.raises(ReadOnlyScope, match=r"read-only .*write to local or shared memory instead"):
            write()
    assert frozen.list() == [entry]
    with pytest.raises(MemoryOperationError, match=re.escape("'..' part")):
        frozen.get("../x")


def test_stores_keep_the_contract() -> None:
    stores: list[MemoryStore] = [TreeStore(Scope.LOCAL), FrozenStore(Scope.INHERITED, ())]
    assert [(s.scope, s.writable) for s in stores] == [(Scope.LOCAL, True), (Scope.INHERITED, False)]


def test_a_top_agent_has_local_and_shared_and_nothing_inherited() -> None:
    top = TreeMemory.start()
    assert set(top.scopes()) == {Scope.LOCAL, Scope.SHARED}
    assert top.scopes()[Scope.LOCAL] is top.local and top.scopes()[Scope.SHARED] is top.shared


def test_a_child_shares_the_tree_store_gets_its_own_local_and_inherits_a_frozen_copy() -> None:
    parent = TreeMemory.start()
    parent.local.put("plan.md", "parent plan", expected=None)
    parent.shared.put("goal.md", "the goal", expected=None)
    child = parent.child()
    sibling = parent.child()
    assert set(child.scopes()) == {Scope.LOCAL, Scope.SHARED, Scope.INHERITED}
    assert child.shared is parent.shared is sibling.shared
    assert child.local.list() == [] and child.local is not sibling.local
    # Shared both ways: what the child leaves, the parent and the sibling read.
    child.shared.put("found.md", "greet is in src/app.py", expected=None)
    assert parent.shared.get("found.md") is not None and sibling.shared.get("found.md") is not None
    # Local is the child's alone.
    child.local.put("scratch.md", "mine", expected=None)
    assert parent.local.get("scratch.md") is None and sibling.local.get("scratch.md") is None
    assert sibling.scopes()[Scope.INHERITED].get("scratch.md") is None
    # Inherited is the parent's local as it was when the child started.
    inherited = child.scopes()[Scope.INHERITED]
    plan = inherited.get("plan.md")
    assert plan is not None and plan.content == "parent plan"
    parent.local.put("later.md", "after the child started", expected=None)
    assert inherited.get("later.md") is None
    with pytest.raises(ReadOnlyScope):
        inherited.put("plan.md", "rewritten", expected=None)


def test_a_grandchild_inherits_its_parents_notes_over_what_the_parent_inherited() -> None:
    top = TreeMemory.start()
    top.local.put("plan.md", "top plan", expected=None)
    top.local.put("style.md", "top style", expected=None)
    child = top.child()
    child.local.put("plan.md", "child plan", expected=None)
    grandchild = child.child()
    inherited = grandchild.scopes()[Scope.INHERITED]
    assert {e.path: e.content for e in inherited.list()} == {"plan.md": "child plan", "style.md": "top style"}
    assert grandchild.shared is top.shared


def test_renewed_starts_a_new_tree() -> None:
    top = TreeMemory.start()
    top.local.put("a.md", "x", expected=None)
    top.shared.put("b.md", "y", expected=None)
    fresh = top.renewed()
    assert fresh.local.list() == [] and fresh.shared.list() == [] and fresh.shared is not top.shared


def test_scopes_beside_the_projects_global_store() -> None:
    top = TreeMemory.start()
    project = TreeStore(Scope.GLOBAL)
    scopes = top.scopes({Scope.GLOBAL: project})
    assert scopes[Scope.GLOBAL] is project and scopes[Scope.SHARED] is top.shared
    assert set(top.scopes()) == {Scope.LOCAL, Scope.SHARED}  # unchanged
