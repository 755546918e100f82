"""The tools block stays byte-identical across turns, and changes once, between
requests, when a server announces a new tool list."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.mcp_servers import ReferenceServers

from .helpers import run_loom


def test_tools_block_stable_then_changes_once(tmp_path: Path, workspace: Path, fake_llm: FakeLLMServer,
                                              reference_servers: ReferenceServers) -> None:
    servers = {"everything": reference_servers.everything(), "bad": reference_servers.misbehaving()}
    echo = [Reply.tool("mcp__everything__echo", {"message": f"turn {i}"}) for i in range(8)]
    fake_llm.enqueue(*echo[:5], Reply.tool("mcp__bad__grow", {}), *echo[5:], Reply.text("done"))
    done = run_loom(tmp_path, workspace, fake_llm, ["go", "--allow", "mcp__bad"], user_servers=servers)
    assert done.returncode == 0, done.stderr
    blocks = [json.dumps(r.body["tools"]) for r in fake_llm.requests]
    assert len(blocks) == 10
    assert len(set(blocks[:6])) == 1  # six requests (five turns and the grow call) alike
    names = [t["name"] for t in fake_llm.requests[0].body["tools"]]
    mcp = [n for n in names if n.startswith("mcp__")]
    assert mcp == sorted(mcp) and any(n.startswith("mcp__bad__") for n in mcp)
    assert "mcp__bad__extra" in blocks[-1] and "mcp__bad__extra" not in blocks[5]
    assert sum(a != b for a, b in pairwise(blocks)) == 1  # it changed exactly once
