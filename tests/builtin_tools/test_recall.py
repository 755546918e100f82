"""recall: finds a memory file and a past session of this project; by meaning when an
embeddings endpoint is configured (the fake server's hashed bag of words), past sessions
too, and still by words when that endpoint fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from builtin_tools.recall import Embeddings, RecallTool
from loom_engine.index.session_index import SessionIndex
from loom_engine.memory.entries import Scope
from loom_engine.memory.folder import MemoryFolder
from tests.builtin_tools.conftest import CallTool, MakeCtx
from tests.doubles.fake_llm import FakeLLMServer
from tests.doubles.fake_llm.embeddings import embed as fake_embed
from tests.doubles.saved_sessions import Exchange, save_session


@pytest.fixture
def index(tmp_path: Path) -> SessionIndex:
    return SessionIndex(tmp_path / "data" / "index" / "search.db", tmp_path / "data" / "sessions")


async def test_finds_a_memory_and_a_past_session(index: SessionIndex, make_ctx: MakeCtx, call_tool: CallTool,
                                                tmp_path: Path) -> None:
    folder = MemoryFolder(tmp_path / "mem" / "repo")
    other = MemoryFolder(tmp_path / "mem" / "other")
    folder.put("deploy.md", "Deploys go through the staging cluster first.\n", expected=None)
    other.put("deploy.md", "Another project's staging notes.\n", expected=None)
    ctx = make_ctx(tmp_path / "repo", memory_scopes={Scope.GLOBAL: folder})
    save_session(index.sessions_root, ctx.workspace.root,
                 [Exchange("why does staging deploy hang", answer="The staging migration lock.")])
    out = await call_tool(RecallTool(index=index), ctx, query="staging")
    assert not out.is_error
    lines = out.content.splitlines()
    assert lines[0] == "Memory files (by words):"
    assert lines[1].startswith("- /memories/deploy.md: ") and "«staging»" in lines[1]
    assert "Another project" not in out.content  # only this project's memory
    assert "1 earlier session of this project match 'staging'" in out.content
    # an edit is seen at the next recall (the row follows the file's version)
    entry = folder.get("deploy.md")
    assert entry is not None
    folder.put("deploy.md", "Deploys now go straight to production.\n", expected=entry.version)
    again = await call_tool(RecallTool(index=index), ctx, query="production")
    assert "«production»" in again.content


async def test_by_meaning_with_an_embeddings_endpoint(index: SessionIndex, make_ctx: MakeCtx, call_tool: CallTool,
                                                     tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    folder = MemoryFolder(tmp_path / "mem")
    folder.put("deploy.md", "Deploy to the staging server before production.\n", expected=None)
    folder.put("style.md", "Use tabs in makefiles, spaces elsewhere.\n", expected=None)
    ctx = make_ctx(tmp_path / "repo", memory_scopes={Scope.GLOBAL: folder})
    embeddings = Embeddings(fake_llm.openai_base_url, "fake-embed", "k")
    # "cluster" is in no file: word search finds nothing, the nearest meaning is still found
    words = await call_tool(RecallTool(index=index), ctx, query="staging deploy cluster")
    assert "No memory file matches" in words.content
    out = await call_tool(RecallTool(embeddings, index=index), ctx, query="staging deploy cluster")
    assert out.content.splitlines()[:2] == ["Memory files (by meaning):",
                                            "- /memories/deploy.md: Deploy to the staging server before production."]
    calls = fake_llm.embedding_calls
    await call_tool(RecallTool(embeddings, index=index), ctx, query="tabs")
    assert fake_llm.embedding_calls == calls + 1  # the files' vectors were kept; only the query is embedded


def _synonym(word: str) -> str:
    """A made-up word the fake embedder gives the same vector as ``word`` (its meaning,
    as a hashed bag of words defines it) though no text shares a letter run with it."""
    wanted = fake_embed(word)
    return next(f"zq{n}" for n in range(10_000) if fake_embed(f"zq{n}") == wanted)


async def test_past_sessions_by_meaning_only_this_projects(index: SessionIndex, make_ctx: MakeCtx,
                                                            call_tool: CallTool, tmp_path: Path,
                                                            fake_llm: FakeLLMServer) -> None:
    ctx = make_ctx(tmp_path / "repo", session_id="now")
    here = save_session(index.sessions_root, ctx.workspace.root,
                        [Exchange("fix the login form", answer="Validated the email field."),
                         Exchange("the lighthouse service drops requests", answer="Its pool was too small.")])
    save_session(index.sessions_root, ctx.workspace.root, [Exchange("rename the billing module")])
    save_session(index.sessions_root, tmp_path / "other", [Exchange("lighthouse lighthouse lighthouse")])
    query = _synonym("lighthouse")
    words = await call_tool(RecallTool(index=index), ctx, query=query)
    assert "No earlier session of this project matches" in words.content
    embeddings = Embeddings(fake_llm.openai_base_url, "fake-embed", "k")
    out = await call_tool(RecallTool(embeddings, index=index), ctx, query=query)
    lines = out.content.splitlines()
    assert lines[:2] == ["Earlier sessions (by words and meaning):",
                         f"1 earlier session of this project match {query!r}, best first:"]
    assert lines[2].startswith(f"1. {here.id} · ") and "other" not in out.content
    assert lines[4] == "   match: the lighthouse service drops requests Its pool was too small."
    assert fake_llm.embedding_calls == 2  # the query, and one batch of the project's three exchanges
    # a restart (another tool, another index object over the same file) embeds only the query
    restarted = SessionIndex(index.db_path, index.sessions_root)
    again = await call_tool(RecallTool(embeddings, index=restarted), ctx, query=query)
    assert again.content == out.content and fake_llm.embedding_calls == 3


async def test_a_failing_endpoint_still_recalls_by_words(index: SessionIndex, make_ctx: MakeCtx,
                                                        call_tool: CallTool, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path / "repo")
    save_session(index.sessions_root, ctx.workspace.root, [Exchange("why does staging deploy hang")])
    unreachable = Embeddings("http://127.0.0.1:9/v1", "fake-embed", "k")
    out = await call_tool(RecallTool(unreachable, index=index), ctx, query="staging")
    assert not out.is_error
    assert out.content.startswith("(The embeddings endpoint failed: APIConnectionError")
    assert "1 earlier session of this project match 'staging'" in out.content
