"""`loom run` starts importing the provider SDK first thing, in a thread, so the import
overlaps with the rest of start-up (typer, the engine, the settings, git, the files read)
instead of following it; checked with the import-logging hook of test_startup_imports."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_startup_imports import first_loads, import_logging_env
from tests.doubles.fake_llm import FakeLLMServer, Reply
from tests.doubles.loom_command import loom, loom_env


def sdk_start(loads: dict[str, tuple[float, str]], package: str) -> tuple[float, str]:
    found = sorted(v for module, v in loads.items() if module == package or module.startswith(package + "."))
    assert found, f"{package} was never imported"
    return found[0]


def test_run_imports_the_sdk_in_a_thread_from_the_start(workspace: Path, tmp_path: Path,
                                                        fake_llm: FakeLLMServer) -> None:
    log = tmp_path / "imports.log"
    fake_llm.enqueue(Reply.text("hello"))
    done = loom(["run", "hi"], workspace, loom_env(tmp_path, fake_llm, **import_logging_env(tmp_path, log)))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    loads = first_loads(log)
    started, thread = sdk_start(loads, "anthropic")
    assert thread != "MainThread", "the SDK was imported on the main thread, after the rest of start-up"
    assert started < loads["loom_cli.bootstrap"][0], "the SDK import began only after start-up"


def test_openai_provider_flag_picks_the_sdk_to_import(workspace: Path, tmp_path: Path,
                                                      fake_llm: FakeLLMServer) -> None:
    log = tmp_path / "imports.log"
    fake_llm.enqueue(Reply.text("hello"))
    env = loom_env(tmp_path, fake_llm, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=fake_llm.openai_base_url,
                   **import_logging_env(tmp_path, log))
    done = loom(["run", "hi", "--provider", "openai", "--model", "gpt-4.1"], workspace, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"
    loads = first_loads(log)
    assert sdk_start(loads, "openai")[1] != "MainThread"
    assert not any(m == "anthropic" or m.startswith("anthropic.") for m in loads), "the unused SDK was imported"
