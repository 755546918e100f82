"""The first prompt does not freeze: the provider SDK is never imported on the UI's loop.

The installed `loom` runs in tmux against the fake LLM server with an audit hook (a
``sitecustomize`` on its path) that logs every module load with the thread doing it.
`import anthropic` loads about 3,000 modules in a second or more; on the UI thread it
froze the screen between the user's Enter and the request.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.terminal import TMUX, open_loom, terminal_env

ROOT = Path(__file__).resolve().parents[2]

_HOOK = '''
import os, sys, threading, time
_path = os.environ.get("LOOM_TEST_IMPORT_LOG")
if _path:
    _fd = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    def _log_import(event, args):
        if event == "import":
            line = f"{time.monotonic():.6f} {threading.current_thread().name} {args[0]}\\n"
            os.write(_fd, line.encode())
    sys.addaudithook(_log_import)
'''

pytestmark = pytest.mark.skipif(not Path(TMUX).exists(), reason="tmux is not installed")


def import_logging_env(tmp_path: Path, log: Path) -> dict[str, str]:
    """PYTHONPATH for `loom` with the import-logging hook first, then this checkout."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOOK)
    code = os.environ.get("PYTHONPATH") or str(ROOT)
    # LOOM_WARM=0: the hook logs a fresh interpreter's imports, not a warm child's.
    return {"LOOM_TEST_IMPORT_LOG": str(log), "PYTHONPATH": os.pathsep.join((str(hook), code)), "LOOM_WARM": "0"}


def first_loads(log: Path) -> dict[str, tuple[float, str]]:
    """Each module's first load: (monotonic time, thread name)."""
    loads: dict[str, tuple[float, str]] = {}
    for line in log.read_text().splitlines():
        stamp, thread, module = line.split(" ", 2)
        loads.setdefault(module, (float(stamp), thread))
    return loads


def test_first_prompt_imports_nothing_on_the_ui_thread(workspace: Path, tmp_path: Path,
                                                       fake_llm: FakeLLMServer) -> None:
    log = tmp_path / "imports.log"
    fake_llm.enqueue(Reply.text("pong from the model"))
    env = terminal_env(tmp_path, fake_llm, **import_logging_env(tmp_path, log))
    term = open_loom(workspace, env, width=120)
    try:
        term.wait_for(lambda s: "Loom ·" in s and "loading" not in s, "the chat to be ready", timeout=90)
        term.type("ping")
        enter = time.monotonic()  # the same clock as the hook's (CLOCK_MONOTONIC)
        term.keys("Enter")
        term.wait_for(lambda s: "pong from the model" in s, "the answer", timeout=60)
    finally:
        term.close()

    loads = first_loads(log)
    sdk = sorted((when, thread) for module, (when, thread) in loads.items()
                 if module == "anthropic" or module.startswith("anthropic."))
    assert sdk, "the Anthropic SDK was never imported"
    assert sdk[0][1] != "MainThread", "the Anthropic SDK was imported on the UI's thread"
    on_ui_after_enter = sorted(module for module, (when, thread) in loads.items()
                               if when >= enter and thread == "MainThread"
                               and not module.startswith(("loom_engine", "loom_cli", "builtin_tools")))
    assert on_ui_after_enter == [], f"loaded on the UI thread by the first prompt: {on_ui_after_enter[:20]}"
