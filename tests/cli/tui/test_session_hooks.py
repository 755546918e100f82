"""The chat runs SessionStart and SessionEnd hooks: at start-up, around /clear, and on quit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loom_cli.tui.options import TuiOptions
from loom_cli.tui.transcript import Notice
from loom_engine.hooks.config import HookSet, parse_hooks
from tests.cli.tui.helpers import Harness, wait_for, wait_idle

RECORD = "python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d), file=open(\"hooks.log\",\"a\"))'"
CONTEXT = "cat >/dev/null; echo 'The staging server is down today'"


class HookHarness(Harness):
    def factory(self, options: TuiOptions) -> Any:
        from loom_engine.agent import Agent
        from loom_engine.parts import AgentParts

        agent = super().factory(options)
        table = {"SessionStart": [{"hooks": [{"type": "command", "command": RECORD},
                                             {"type": "command", "command": CONTEXT}]}],
                 "SessionEnd": [{"hooks": [{"type": "command", "command": RECORD}]}],
                 "Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": RECORD}]}]}
        hooks, problems = parse_hooks(table, source="test", in_project=False)
        assert not problems
        self.agents[-1] = Agent(agent.config,
                                AgentParts(provider=agent.provider, tools=list(agent.registry),
                                           workspace=agent.workspace, permissions=agent.permissions,
                                           hooks=HookSet(tuple(hooks))), system_prompt=agent.system_prompt)
        return self.agents[-1]


def _logged(repo: Path) -> list[tuple[str, str]]:
    log = repo / "hooks.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [(d["hook_event_name"], d.get("source") or d.get("reason")) for d in map(json.loads, lines)]


async def test_session_hooks_at_start_clear_and_quit(repo: Path, tmp_path: Path) -> None:
    harness = HookHarness(repo, tmp_path / "data", [{"text": "First answer."}, {"text": "After clear."}])
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        assert _logged(repo) == [("SessionStart", "startup")]
        await pilot.press(*"hello")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        sent = harness.providers[0].last_request.messages
        assert any("The staging server is down today" in m.text for m in sent)
        await pilot.press(*"/clear")
        await pilot.press("enter")  # one prompt (the hook's context is not one): cleared without a question
        await wait_for(pilot, lambda: len(harness.agents) == 2 and app.agent is harness.agents[1]
                       and app.loaded.is_set())
        assert _logged(repo)[1:] == [("SessionEnd", "clear"), ("SessionStart", "clear")]
        assert not [n for n in app.transcript.query(Notice) if "hook" in str(n.render())]
    assert _logged(repo)[-1] == ("SessionEnd", "prompt_input_exit")


async def test_a_minute_without_a_prompt_after_an_answer_runs_the_idle_notification(repo: Path,
                                                                                  tmp_path: Path) -> None:
    harness = HookHarness(repo, tmp_path / "data", [{"text": "First answer."}, {"text": "Second."}])
    app = harness.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.agent is not None and app.loaded.is_set())
        app.lifecycle.idle_prompt_s = 0.6
        await pilot.press(*"hello")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        await wait_for(pilot, lambda: ("Notification", None) in _logged(repo))
        [idle] = [json.loads(line) for line in (repo / "hooks.log").read_text().splitlines()
                  if json.loads(line)["hook_event_name"] == "Notification"]
        assert idle["notification_type"] == "idle_prompt"
        # Anything sent before the wait is over (here a command, which starts no run that
        # would arm a new wait) ends that wait without a notification.
        # The wait is long enough that only its cancellation can end it within the test
        # (a short one raced the typing of /cost on a loaded machine).
        app.lifecycle.idle_prompt_s = 3600.0
        await pilot.press(*"again")
        await pilot.press("enter")
        await wait_idle(pilot, app)
        armed = app.lifecycle._idle_wait
        assert armed is not None and not armed.done()
        await pilot.press(*"/cost")
        await pilot.press("enter")
        await wait_for(pilot, armed.done)
        assert armed.cancelled()
        assert [e for e, _ in _logged(repo)].count("Notification") == 1
