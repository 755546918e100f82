"""A real agent tree's memory: who sees which scope, what a parent gets of a child, and
parallel children writing one shared note."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.config import AgentConfig
from loom_engine.events import Finished
from loom_engine.memory.tree import TreeMemory
from loom_engine.messages import Message, TextPart, ToolUsePart
from loom_engine.parts import AgentParts
from loom_engine.providers.base import ProviderRequest, StreamCompleted
from loom_engine.usage import Usage
from loom_engine.workspace import Workspace
from tests.doubles.memory_probe import NoteTool

Step = str | Sequence[tuple[str, Mapping[str, Any]]]  # a final answer, or the tool calls of one turn


class TreeScript:
    """Answers each agent of the tree from its own script, found by the prompt it is
    working on; the step is how many answers it has given to that prompt. Children named in
    ``meet`` wait for one another before their first answer, so their calls overlap."""

    name = "tree-script"

    def __init__(self, scripts: Mapping[str, Sequence[Step]], meet: Sequence[str] = ()) -> None:
        self.scripts = scripts
        self.requests: dict[str, list[ProviderRequest]] = {key: [] for key in scripts}
        self.meet = set(meet)
        self.barrier = asyncio.Barrier(len(meet)) if meet else None

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        # The agent's prompt: a child's first message, or the latest a top agent was given.
        start = max(i for i, m in enumerate(request.messages) if m.role == "user" and m.text in self.scripts)
        who = request.messages[start].text
        self.requests[who].append(request)
        step = sum(1 for m in request.messages[start:] if m.role == "assistant")
        if step == 0 and who in self.meet and self.barrier is not None:
            await asyncio.wait_for(self.barrier.wait(), 30)  # a bound on a hang, not a timing
        planned = self.scripts[who][step]
        if isinstance(planned, str):
            yield StreamCompleted(Message.assistant(TextPart(planned)), "end_turn", Usage(10, 1))
            return
        calls = [ToolUsePart(f"{who}-{step}-{k}".replace(" ", "_"), name, dict(args))
                 for k, (name, args) in enumerate(planned)]
        yield StreamCompleted(Message.assistant(*calls), "tool_use", Usage(10, 1))

    def results(self, who: str, step: int) -> list[str]:
        """The tool results ``who`` was sent after its answer number ``step``."""
        return [part.content for part in self.requests[who][step + 1].messages[-1].tool_results_parts]


def note(op: str, scope: str, path: str = "", text: str = "") -> tuple[str, dict[str, str]]:
    return "note", {"op": op, "scope": scope, "path": path, "text": text}


def task(prompt: str, tools: Sequence[str] = ("note",)) -> tuple[str, dict[str, Any]]:
    return "task", {"description": prompt, "prompt": prompt, "tools": list(tools)}


def parent_agent(tmp_path: Path, provider: TreeScript, memory: TreeMemory, probe: NoteTool) -> Agent:
    return Agent(AgentConfig(model="m"),
                 AgentParts(provider=provider, tools=[*default_tools(), probe], workspace=Workspace.at(tmp_path)),
                 system_prompt="parent", tree_memory=memory)


async def test_shared_is_seen_by_parent_and_sibling_local_by_no_one_inherited_is_read_only(tmp_path: Path) -> None:
    script = TreeScript({
        "research": [
            [note("write", "local", "plan.md", "parent plan"), note("write", "shared", "goal.md", "find greet")],
            [task("child a")],
            [task("child b")],
            [note("read", "shared", "found/a.md"), note("list", "local"), note("list", "shared"),
             note("read", "inherited", "plan.md")],
            "parent done",
        ],
        "child a": [
            [note("write", "local", "scratch.md", "only mine"),
             note("write", "shared", "found/a.md", "greet is in src/app.py"),
             note("read", "inherited", "plan.md"),
             note("write", "inherited", "plan.md", "rewritten"),
             note("read", "shared", "goal.md")],
            "a done",
        ],
        "child b": [
            [note("read", "shared", "found/a.md"), note("read", "local", "scratch.md"),
             note("list", "inherited")],
            "b done",
        ],
    })
    memory, probe = TreeMemory.start(), NoteTool()
    parent = parent_agent(tmp_path, script, memory, probe)
    events = [e async for e in parent.run("research")]
    assert isinstance(events[-1], Finished) and events[-1].result == "parent done"

    wrote_local, wrote_shared, read_inherited, refused, read_goal = script.results("child a", 0)
    assert (wrote_local, wrote_shared) == ("wrote scratch.md", "wrote found/a.md")
    assert read_inherited == "parent plan" and read_goal == "find greet"
    assert "read-only" in refused and "write to local or shared memory instead" in refused
    # The sibling reads what the first child left in shared; its own local is new, and
    # what it inherits is the parent's notes, not its sibling's.
    assert script.results("child b", 0) == ["greet is in src/app.py", "(no scratch.md)", "plan.md"]
    # The parent reads the finding; the child's local note reached it nowhere.
    found, local, shared, inherited = script.results("research", 3)
    assert found == "greet is in src/app.py"
    assert local == "plan.md" and shared == "found/a.md\ngoal.md"
    assert inherited == "no inherited scope here"  # the top agent inherits nothing
    # What the parent got of the child: its answer, not its local notes.
    answer_a = script.results("research", 1)[0]
    assert answer_a.startswith("a done") and "only mine" not in answer_a
    assert all("only mine" not in e.content for e in memory.shared.list() + memory.local.list())


async def test_a_childs_local_store_is_gone_when_the_child_ends(tmp_path: Path) -> None:
    script = TreeScript({
        "research": [[task("child a")], "parent done"],
        "child a": [[note("write", "local", "scratch.md", "only mine")], "a done"],
    })
    memory, probe = TreeMemory.start(), NoteTool()
    parent = parent_agent(tmp_path, script, memory, probe)
    [_ async for _ in parent.run("research")]
    (child_local,) = probe.local_stores
    gc.collect()
    assert child_local() is None  # nothing holds the child's notes once it has answered
    assert parent.messages and memory.local.list() == []


async def test_parallel_children_appending_to_one_shared_note_lose_no_write(tmp_path: Path) -> None:
    children = [f"child {n}" for n in range(3)]
    script = TreeScript({
        "research": [[task(c) for c in children], [note("read", "shared", "log.md")], "parent done"],
        **{c: [[note("append", "shared", "log.md", f"{c} was here\n"),
                note("write", "shared", f"by/{c.replace(' ', '-')}.md", c)], f"{c} done"] for c in children},
    }, meet=children)
    memory, probe = TreeMemory.start(), NoteTool()
    parent = parent_agent(tmp_path, script, memory, probe)
    events = [e async for e in parent.run("research")]
    assert isinstance(events[-1], Finished) and events[-1].result == "parent done"
    (log,) = script.results("research", 1)
    assert sorted(log.splitlines()) == [f"{c} was here" for c in children]
    assert [e.path for e in memory.shared.list("by")] == [f"by/child-{n}.md" for n in range(3)]
    assert probe.refusals >= 1  # the children really raced on the note


async def test_shared_lasts_the_session_and_clear_starts_a_new_tree(tmp_path: Path) -> None:
    script = TreeScript({
        "first": [[note("write", "shared", "a.md", "from the first prompt"), note("write", "local", "b.md", "x")],
                  "noted"],
        "second": [[note("read", "shared", "a.md"), note("read", "local", "b.md")], "read"],
        "after clear": [[note("read", "shared", "a.md"), note("read", "local", "b.md")], "read again"],
    })
    memory = TreeMemory.start()
    parent = parent_agent(tmp_path, script, memory, NoteTool())
    [_ async for _ in parent.run("first")]
    [_ async for _ in parent.run("second")]
    assert script.results("second", 0) == ["from the first prompt", "x"]
    parent.clear()
    [_ async for _ in parent.run("after clear")]
    assert script.results("after clear", 0) == ["(no a.md)", "(no b.md)"]
    assert memory.shared.get("a.md") is not None  # the old tree's store, no longer the agent's


async def test_shared_reaches_any_depth_and_a_grandchild_inherits_from_its_own_parent(tmp_path: Path) -> None:
    script = TreeScript({
        "research": [[note("write", "local", "plan.md", "top plan")], [task("child", ("note", "task"))],
                     [note("read", "shared", "deep.md")], "parent done"],
        "child": [[note("write", "local", "plan.md", "child plan")], [task("grandchild", ("note", "task"))],
                  "child done"],
        "grandchild": [[note("read", "inherited", "plan.md"), note("write", "shared", "deep.md", "from depth 2")],
                       "grandchild done"],
    })
    memory = TreeMemory.start()
    parent = parent_agent(tmp_path, script, memory, NoteTool())
    events = [e async for e in parent.run("research")]
    assert isinstance(events[-1], Finished) and events[-1].result == "parent done"
    assert script.results("grandchild", 0) == ["child plan", "wrote deep.md"]
    assert script.results("research", 2) == ["from depth 2"]
