"""Issue 19 §2 items 7 and 11: a project may not choose the model (or vendor) unasked.

A model choice costs the user money, and another vendor's model sends the work (and the
user's key for that vendor) somewhere else. So a project's `model` and `provider`
settings, and a project agent file's `model:`, are in the workspace's trust question and
apply only once it is trusted; until then the session's provider and model are used and
one line says so. A user's own agent file (in the user config dir) may choose freely.
The runs are the real `loom run` against the fake LLM server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env

IGNORED_PREFIX = "loom: ignored from the project's settings (workspace not trusted; --trust-project to use): "
SESSION_MODEL = "claude-sonnet-4-6"  # what loom_env's LOOM_MODEL names: the session's model


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _env(tmp_path: Path, fake_llm: FakeLLMServer, **extra: str) -> dict[str, str]:
    """Anthropic is the session's vendor; an OpenAI key is there too, as on a machine
    that uses both (it is what a vendor switch would send)."""
    return loom_env(tmp_path, fake_llm, OPENAI_API_KEY="sk-openai-user-key",
                    OPENAI_BASE_URL=fake_llm.openai_base_url, **extra)


# -- item 7: the project's model setting ---------------------------------------------


@pytest.mark.parametrize("file", ["settings.toml", "settings.local.toml"])
def test_a_project_model_applies_only_once_trusted(workspace: Path, tmp_path: Path, fake_llm: FakeLLMServer,
                                                   file: str) -> None:
    _write(workspace / ".loom" / file, 'model = "claude-opus-4-1"\n')
    env = _env(tmp_path, fake_llm)
    del env["LOOM_MODEL"]  # nothing of the user's names a model: the project's would be used
    fake_llm.enqueue(Reply.text("hello"), Reply.text("hello again"))
    done = loom(["run", "hi"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert fake_llm.requests[0].body["model"] == SESSION_MODEL  # Loom's default for Anthropic
    assert IGNORED_PREFIX + f'.loom/{file}: model = "claude-opus-4-1"' in done.stderr.splitlines()
    trusted = loom(["run", "hi", "--trust-project"], workspace, env)
    assert trusted.returncode == 0, trusted.stderr
    assert fake_llm.requests[1].body["model"] == "claude-opus-4-1"


def test_a_project_provider_does_not_switch_the_vendor_untrusted(workspace: Path, tmp_path: Path,
                                                                 fake_llm: FakeLLMServer) -> None:
    _write(workspace / ".loom" / "settings.toml", 'provider = "openai"\nmodel = "gpt-4o"\n')
    env = _env(tmp_path, fake_llm)
    del env["LOOM_PROVIDER"], env["LOOM_MODEL"]
    fake_llm.enqueue(Reply.text("hello"))
    done = loom(["run", "hi"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert [r.api for r in fake_llm.requests] == ["anthropic"]
    assert IGNORED_PREFIX + '.loom/settings.toml: provider = "openai", model = "gpt-4o"' in done.stderr.splitlines()


def test_the_model_is_in_the_trust_question(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loom_cli.tui.trust_screen import describe_changes, read_current
    from tests.doubles.loom_command import isolate_loom

    isolate_loom(monkeypatch, tmp_path)
    _write(workspace / ".loom" / "settings.toml", 'model = "claude-opus-4-1"\n')
    additions = read_current(workspace)
    shown = describe_changes(additions.settings).plain
    assert '  .loom/settings.toml\n  • model = "claude-opus-4-1"  — chooses the model (what you pay for)' == shown


# -- item 11: a project agent file's model -------------------------------------------


SECOND_OPINION = ("---\nname: second-opinion\ndescription: Another vendor's view.\ntools: Read\nmodel: gpt-4o\n"
                  "---\nYou GIVE A SECOND OPINION.\n")


def _ask_second_opinion(fake_llm: FakeLLMServer) -> None:
    fake_llm.enqueue(Reply.tool("task", {"description": "ask", "prompt": "Look at src/app.py",
                                         "subagent_type": "second-opinion"}),
                     Reply.text("fine by me"), Reply.text("both agree"))


@pytest.mark.parametrize("folder", [".claude/agents", ".loom/agents"])
def test_a_project_agent_does_not_send_work_to_another_vendor_untrusted(workspace: Path, tmp_path: Path,
                                                                        fake_llm: FakeLLMServer,
                                                                        folder: str) -> None:
    """The repro: `model: gpt-4o` in `.claude/agents/x.md`, in an Anthropic session, sent
    the sub-agent's prompt to OpenAI with the user's key, no question."""
    _write(workspace / folder / "second-opinion.md", SECOND_OPINION)
    _ask_second_opinion(fake_llm)
    done = loom(["run", "second opinion please"], workspace, _env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    parent, child, _ = fake_llm.requests
    assert (parent.api, child.api) == ("anthropic", "anthropic")
    assert child.body["model"] == SESSION_MODEL
    assert "You GIVE A SECOND OPINION." in json.dumps(child.body["system"])
    assert (IGNORED_PREFIX + f'{folder}/second-opinion.md: agent second-opinion: model "gpt-4o" (openai; '
            "the session's model is used)") in done.stderr.splitlines()
    # What the sub-agent's result says, for the calling model and the user.
    assert ("model gpt-4o of the agent file not used (workspace not trusted): ran on claude-sonnet-4-6"
            in json.dumps(fake_llm.requests[2].messages[-1]))


def test_a_trusted_project_agent_may_use_another_vendor(workspace: Path, tmp_path: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    _write(workspace / ".claude/agents/second-opinion.md", SECOND_OPINION)
    _ask_second_opinion(fake_llm)
    done = loom(["run", "second opinion please", "--trust-project"], workspace, _env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    parent, child, _ = fake_llm.requests
    assert (parent.api, child.api, child.body["model"]) == ("anthropic", "openai", "gpt-4o")
    assert "loom: ignored" not in done.stderr


def test_the_users_own_agent_may_use_another_vendor(workspace: Path, tmp_path: Path,
                                                    fake_llm: FakeLLMServer) -> None:
    _write(tmp_path / "config" / "agents" / "second-opinion.md", SECOND_OPINION)
    _ask_second_opinion(fake_llm)
    done = loom(["run", "second opinion please"], workspace, _env(tmp_path, fake_llm))
    assert done.returncode == 0, done.stderr
    parent, child, _ = fake_llm.requests
    assert (parent.api, child.api, child.body["model"]) == ("anthropic", "openai", "gpt-4o")
    assert child.headers.get("authorization") == "Bearer sk-openai-user-key"
    assert "loom: ignored" not in done.stderr


def test_a_changed_agent_model_asks_again(workspace: Path, tmp_path: Path) -> None:
    """The agent's model is part of the trusted set: trusting one model does not cover
    another one written later."""
    from loom_cli.project_trust import changes_hash
    from loom_cli.settings import load_settings

    agent = workspace / ".claude/agents/second-opinion.md"
    _write(agent, SECOND_OPINION)
    first = load_settings(workspace, tmp_path / "none.toml", environ={})
    assert [c.describe() for c in first.widening] == ['agent second-opinion: model "gpt-4o" (openai)']
    digest = changes_hash(first.widening)
    assert load_settings(workspace, tmp_path / "none.toml", environ={}, trusted_hash=digest).trusted
    _write(agent, SECOND_OPINION.replace("gpt-4o", "o3"))
    assert not load_settings(workspace, tmp_path / "none.toml", environ={}, trusted_hash=digest).trusted
