"""Record what `claude -p` prints (`-o json` and `-o stream-json`) against the fake LLM
server, into tests/cli/fixtures/claude_code/: the shapes Loom's own output is compared
with, key by key (tests/cli/test_claude_code_shapes.py).

    python -m tests.doubles.record_claude_code [/path/to/claude]

Each scenario runs in a throwaway HOME and repository; paths are written as /repo and
/home so the files do not change with the temporary folder's name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.doubles.fake_llm import FakeLLMServer, Reply

FIXTURES = Path(__file__).resolve().parent.parent / "cli" / "fixtures" / "claude_code"
DEFAULT_CLAUDE = Path("/work/peers/node_modules/.bin/claude")

# name -> (the replies for the repository's path, extra arguments)
SCENARIOS: dict[str, tuple[Callable[[Path], list[Reply]], list[str]]] = {
    "text": (lambda repo: [Reply.text("hello")], []),
    "tool": (lambda repo: [Reply.tool("Read", {"file_path": str(repo / "hello.py")}),
                           Reply.text("It prints hello.")], []),
    # Headless: the command is not allowed, so it is denied (permission_denials).
    "denied": (lambda repo: [Reply.tool("Bash", {"command": "touch made.txt", "description": "make a file"}),
                             Reply.text("I could not.")], []),
    "max_turns": (lambda repo: [Reply.tool("Read", {"file_path": str(repo / "hello.py")}),
                                Reply.tool("Read", {"file_path": str(repo / "hello.py")})], ["--max-turns", "1"]),
    "error": (lambda repo: [Reply.error(400, "bad thing", type="invalid_request_error")] * 3, []),
}


def _env(home: Path, server: FakeLLMServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="sk-ant-record", ANTHROPIC_BASE_URL=server.anthropic_base_url,
               DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1", DISABLE_AUTOUPDATER="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    return env


def record(claude: Path, name: str, output_format: str) -> str:
    replies, extra = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as tmp_name, FakeLLMServer() as server:
        tmp = Path(tmp_name).resolve()
        repo, home = tmp / "repo", tmp / "home"
        repo.mkdir()
        home.mkdir()
        (repo / "hello.py").write_text("print('hello')\n")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        server.enqueue(*replies(repo), *[Reply.text("(a side request)")] * 4)
        verbose = ["--verbose"] if output_format == "stream-json" else []  # stream-json needs it
        done = subprocess.run([str(claude), "-p", "do the task", "--output-format", output_format,
                               "--model", "claude-sonnet-4-5", *verbose, *extra],
                              cwd=repo, env=_env(home, server), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=180)
        out = done.stdout.decode()
        return out.replace(str(repo), "/repo").replace(str(home), "/home").replace(
            str(tmp).replace("/", "-").replace("_", "-"), "-tmp")


def main() -> None:
    claude = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CLAUDE
    FIXTURES.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([str(claude), "--version"], capture_output=True, text=True, check=True).stdout
    (FIXTURES / "VERSION").write_text(version)
    for name in SCENARIOS:
        (FIXTURES / f"{name}.json").write_text(record(claude, name, "json"))
        (FIXTURES / f"{name}.stream.jsonl").write_text(record(claude, name, "stream-json"))
        print(f"recorded {name}")


if __name__ == "__main__":
    main()
