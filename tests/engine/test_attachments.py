"""``@path`` in a prompt: what the model gets, and what is not read."""

from __future__ import annotations

import json
from pathlib import Path

from builtin_tools import default_tools
from loom_engine.agent import Agent
from loom_engine.attachments import MAX_ATTACHMENTS, Attachment, UserPrompt, find_mentions
from loom_engine.config import AgentConfig
from loom_engine.context.compressor import StructuredCompressor
from loom_engine.context.prompts import COMPACTION_SECTIONS
from loom_engine.context.tokens import TokenCounter
from loom_engine.events import Finished, Notice
from loom_engine.messages import Message, TextPart, ToolResultPart, ToolUsePart
from loom_engine.parts import AgentParts
from loom_engine.permissions.layers import RuleLayer
from loom_engine.permissions.manager import PermissionManager
from loom_engine.providers.factory import create_provider
from loom_engine.providers.scripted import ScriptedProvider
from loom_engine.sessions.store import SessionStore
from loom_engine.user_command import context_text
from loom_engine.workspace import Workspace
from tests.doubles.fake_llm import FakeLLMServer, Reply

KEY_BODY = "MIIEowIBAAKCAQEA" + "q" * 48


def _agent(root: Path, server: FakeLLMServer | None = None, *, deny: tuple[str, ...] = (),
           mode: str = "default") -> Agent:
    base_url = server.anthropic_base_url if server is not None else "http://127.0.0.1:9"
    provider = create_provider("anthropic", api_key="k", base_url=base_url)
    workspace = Workspace.at(root)
    layers = [RuleLayer("cli", deny=deny)] if deny else []
    permissions = PermissionManager(workspace, mode=mode, layers=layers)  # type: ignore[arg-type]
    return Agent(AgentConfig(model="claude-haiku-4-5"),
                 AgentParts(provider=provider, tools=default_tools(), workspace=workspace, permissions=permissions),
                 system_prompt="test")


def _project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 121)))
    (root / "README.md").write_text("# demo\n")
    return root


def test_mentions_are_found_with_ranges_and_without_sentence_punctuation() -> None:
    found = find_mentions("look at @src/app.py:10-40 and @README.md, mail @bob; not a@b")
    assert [(m.path, m.start, m.end) for m in found] == [
        ("src/app.py", 10, 40), ("README.md,", None, None), ("bob;", None, None)]


async def test_a_file_is_attached_whole_with_its_path_and_line_count(tmp_path: Path) -> None:
    agent = _agent(_project(tmp_path))
    prompt = await agent.attach("explain @src/app.py please")
    [attachment] = prompt.attachments
    assert attachment.label == "📎 src/app.py (120 lines)"
    message = prompt.message()
    assert message.parts[0].text == "explain @src/app.py please"  # type: ignore[union-attr]
    block = message.parts[1].text  # type: ignore[union-attr]
    assert block.startswith('<attached path="src/app.py" lines="1-120" total_lines="120">')
    assert "line 1\n" in block and "line 120" in block and block.endswith("</attached>")
    assert message.meta["prompt"] == "explain @src/app.py please"


async def test_a_range_attaches_only_those_lines(tmp_path: Path) -> None:
    agent = _agent(_project(tmp_path))
    [attachment] = (await agent.attach("see @src/app.py:10-40")).attachments
    assert attachment.lines == (10, 40)
    assert attachment.label == "📎 src/app.py (lines 10-40 of 120)"
    assert "line 10\n" in attachment.content and "line 40" in attachment.content
    assert "line 9\n" not in attachment.content and "line 41" not in attachment.content


async def test_a_big_file_attaches_its_first_lines_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("".join(f"entry {n}\n" for n in range(1, 5001)))
    agent = _agent(tmp_path)
    [attachment] = (await agent.attach("@big.log")).attachments
    assert attachment.lines == (1, 2000)
    assert attachment.label.startswith("📎 big.log (first 2000 lines of 5000; attach more with @big.log:2001-")
    assert "entry 2001" not in attachment.content
    assert "More lines follow" in attachment.content  # the model is told how to read on


async def test_a_binary_file_is_refused_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    agent = _agent(tmp_path)
    prompt = await agent.attach("what is @logo.png")
    [attachment] = prompt.attachments
    assert not attachment.attached
    assert attachment.label.startswith("@logo.png not attached: it is a")
    assert "PNG" in attachment.label
    assert "was not attached" in prompt.message().parts[1].text  # type: ignore[union-attr]


async def test_a_folder_attaches_its_listing(tmp_path: Path) -> None:
    agent = _agent(_project(tmp_path))
    [attachment] = (await agent.attach("what is in @src")).attachments
    assert attachment.kind == "folder"
    assert attachment.label == "📎 src/ (folder, 1 entry)"
    assert "app.py" in attachment.content


async def test_a_path_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    root = _project(tmp_path / "repo")
    (tmp_path / "outside.txt").write_text("TOP SECRET OUTSIDE\n")
    agent = _agent(root)
    prompt = await agent.attach("read @../outside.txt")
    [attachment] = prompt.attachments
    assert not attachment.attached and "outside the workspace" in attachment.label
    assert "TOP SECRET" not in json.dumps(prompt.message().to_dict())


async def test_a_path_a_deny_rule_protects_is_not_read(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / ".env").write_text("PASSWORD=hunter2\n")
    agent = _agent(root, deny=("read(.env)",))
    prompt = await agent.attach("check @.env")
    [attachment] = prompt.attachments
    assert not attachment.attached and "read(.env)" in attachment.label
    assert "hunter2" not in json.dumps(prompt.message().to_dict())


async def test_a_private_key_in_an_attached_file_is_redacted(tmp_path: Path) -> None:
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n"
    (tmp_path / "deploy.txt").write_text("host: example\n" + key)
    agent = _agent(tmp_path)
    [attachment] = (await agent.attach("@deploy.txt")).attachments
    assert attachment.attached and "host: example" in attachment.content
    assert KEY_BODY not in attachment.content and "REDACTED" in attachment.content


async def test_paths_that_do_not_exist_stay_plain_text(tmp_path: Path) -> None:
    agent = _agent(_project(tmp_path))
    prompt = await agent.attach("ask @bob about @src/nothing.py")
    assert prompt.attachments == ()
    assert prompt.message().text == "ask @bob about @src/nothing.py"


async def test_at_most_a_few_files_are_attached_per_message(tmp_path: Path) -> None:
    for n in range(MAX_ATTACHMENTS + 3):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}\n")
    agent = _agent(tmp_path)
    prompt = await agent.attach(" ".join(f"@f{n}.txt" for n in range(MAX_ATTACHMENTS + 3)))
    assert sum(a.attached for a in prompt.attachments) == MAX_ATTACHMENTS
    assert prompt.attachments[-1].label.startswith("3 more mentioned paths not attached")


async def test_the_request_carries_the_attachment_and_the_user_sees_only_the_label(
        tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.text("It counts lines."))
    agent = _agent(_project(tmp_path), fake_llm)
    events = [e async for e in agent.run(await agent.attach("explain @src/app.py"))]
    assert isinstance(events[-1], Finished)
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices == ["📎 src/app.py (120 lines)"]
    [user] = fake_llm.last_request.messages
    texts = [block["text"] for block in user["content"] if block["type"] == "text"]
    assert texts[0] == "explain @src/app.py"
    assert texts[1].startswith('<attached path="src/app.py"') and "line 120" in texts[1]


async def test_the_user_gets_one_note_for_what_was_attached_and_one_for_what_was_not(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    agent = _agent(tmp_path)
    prompt = await agent.attach("@src/app.py @README.md @logo.png")
    assert prompt.notes() == [
        ("info", ["📎 src/app.py (120 lines)", "📎 README.md (1 line)"]),
        ("warning", ["@logo.png not attached: it is a PNG image (264 bytes)"]),
    ]


def _attached_prompt(text: str, content: str) -> Message:
    attachment = Attachment("src/big.py", "file", content, "📎 src/big.py (1 line)", (1, 1), 1)
    return UserPrompt(text, (attachment,)).message()


def test_a_session_lists_an_attached_prompt_by_what_was_typed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(Path("/work/repo"), provider="anthropic", model="m")
    writer.append_message(_attached_prompt("explain @src/big.py", "ATTACHED CONTENT"))
    writer.close()
    [info] = store.list(Path("/work/repo"))[0]
    assert info.first_prompt == "explain @src/big.py"


async def test_compaction_quotes_the_typed_request_not_its_attachments_nor_a_later_shell_command() -> None:
    history = [_attached_prompt("Please port the CLI to typer, keeping every flag.", "ATTACHED " * 500)]
    for t in range(10):
        use = ToolUsePart(f"t{t}", "bash", {"command": f"pytest -k case{t}"})
        history += [Message.assistant(use), Message.tool_results([ToolResultPart(use.id, "out\n" * 300)])]
    history += [Message.assistant(TextPart("Ported.")),
                Message.user(context_text("git status", "clean\nExit code: 0"),
                             user_command={"command": "git status", "output": "clean", "is_error": False})]
    summary_text = "\n\n".join(f"## {name}\nported" for name in COMPACTION_SECTIONS)
    provider = ScriptedProvider([{"text": summary_text}])
    compressor = StructuredCompressor(provider, "m", TokenCounter(allow_tiktoken=False))
    result = await compressor.compact(history, keep_recent_tokens=200)
    assert result.method == "summary"
    summary = result.messages[0].text
    assert "> Please port the CLI to typer, keeping every flag." in summary
    assert "ATTACHED" not in summary
