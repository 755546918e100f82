"""Search and read tools on a generated 20,000-file tree, next to raw ripgrep in the same run.

Rows: Loom's grep vs `rg` on the same query (target within 1.3x), Loom's glob vs
`rg --files` listing the same tree (within 1.5x; `rg --files --glob` is reported too),
the pure-Python fallback's ratio to rg (reported), and read_file on a 200,000-line file
(reported, with `open().read()` of the whole file as the reference). Raw rg gets the same
file-selection flags Loom passes, so both sides search the same files. Every figure is a
median; the two sides of a ratio alternate so that machine noise hits both alike.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from builtin_tools._files.rg import RG_WALK_ARGS, find_rg
from builtin_tools.glob import GlobInput, GlobTool
from builtin_tools.grep import GrepInput, GrepTool
from loom_engine.execution import CancelToken
from loom_engine.tools.base import ToolContext, ToolSessionState
from loom_engine.workspace import Workspace

FOLDERS = 200
FILES_PER_FOLDER = 100  # 20,000 searched files
IGNORED_FILES = 2_000  # under build/, and *.tmp files, which no search should open
BIG_FILE_LINES = 200_000
REPEATS = 11
FALLBACK_REPEATS = 3

WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega value "
         "result request handler config parser token buffer stream").split()
EXTENSIONS = (".py", ".ts", ".md", ".go", ".txt")


def build_tree(root: Path) -> None:
    """Deterministic content: ~1 file in 40 mentions `needle_<n>`, and functions everywhere."""
    rng = random.Random(1234)
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("build/\n*.tmp\n")
    for d in range(FOLDERS):
        folder = root / f"pkg{d:03d}" / ("sub" if d % 2 else "core")
        folder.mkdir(parents=True)
        for f in range(FILES_PER_FOLDER):
            n = d * FILES_PER_FOLDER + f
            lines = []
            for i in range(rng.randint(10, 40)):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
                lines.append(f"def fn_{n}_{i}(x):  # {words}" if i % 7 == 0 else f"    {words}")
            if n % 40 == 0:
                lines.insert(len(lines) // 2, f"    needle_{n} = {rng.randint(0, 999)}")
            (folder / f"mod{f:03d}{EXTENSIONS[n % len(EXTENSIONS)]}").write_text("\n".join(lines) + "\n")
    build = root / "build"
    build.mkdir()
    for i in range(IGNORED_FILES // 2):
        (build / f"out{i}.py").write_text(f"needle_{i} = 1\n")
        (root / f"pkg{i % FOLDERS:03d}" / f"scratch{i}.tmp").write_text(f"needle_{i}\n")
    big = root / "big.txt"
    big.write_text("".join(f"line {i}: {WORDS[i % len(WORDS)]} and some more text\n"
                           for i in range(BIG_FILE_LINES)))


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def paired(a: Callable[[], object], b: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Medians of a and b, measured back to back, and the median of the pairs' ratios
    (steadier than a ratio of medians when other work on the machine comes and goes)."""
    ta, tb = [], []
    for _ in range(repeats):
        for fn, bucket in ((a, ta), (b, tb)):
            started = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - started)
    ratio = statistics.median(x / y for x, y in zip(ta, tb, strict=False))
    return statistics.median(ta), statistics.median(tb), ratio


def run() -> list[dict[str, Any]]:
    rg = find_rg()
    if rg is None:
        return [dict(benchmark="search tools (rg binary missing)", value="-", unit="",
                     target="rg installed", ok=False)]
    rows: list[dict[str, Any]] = []
    loop = asyncio.new_event_loop()
    try:
        with tempfile.TemporaryDirectory(prefix="loom-bench-") as tmp:
            root = Path(tmp)
            build_tree(root)
            ctx = ToolContext(workspace=Workspace.at(root), cancel=CancelToken(), state=ToolSessionState())

            def tool_call(tool: Any, args: Any) -> Callable[[], object]:
                def call() -> object:
                    out = loop.run_until_complete(tool.run(args, ctx))
                    assert not out.is_error, out.content
                    return out
                return call

            def raw(*args: str) -> Callable[[], object]:
                def call() -> object:
                    return subprocess.run([rg, *RG_WALK_ARGS, *args], cwd=root, capture_output=True,
                                          check=False).stdout
                return call

            files = len(raw("--files", "--", ".")().splitlines())  # type: ignore[union-attr]
            rows.append(dict(benchmark="generated tree: files searched (besides ignored ones)",
                             value=float(files), unit="files", target=">= 20,000", ok=files >= 20_000))

            grep_fast, grep_slow = GrepTool(), GrepTool(use_rg=False)
            queries = [
                ("grep files_with_matches `needle_\\d+`", GrepInput(pattern=r"needle_\d+"),
                 raw("--files-with-matches", "--null", "--crlf", "--regexp", r"needle_\d+", "--", ".")),
                ("grep content `def fn_\\d+_7\\(` in *.py", GrepInput(
                    pattern=r"def fn_\d+_7\(", glob="*.py", output_mode="content", head_limit=500),
                 raw("--line-number", "--null", "--crlf", "--glob", "*.py", "--regexp",
                     r"def fn_\d+_7\(", "--", ".")),
            ]
            for label, args, raw_call in queries:
                tool_call(grep_fast, args)()  # warm the page cache and the code paths
                loom_t, rg_t, ratio = paired(tool_call(grep_fast, args), raw_call, REPEATS)
                rows.append(dict(benchmark=f"{label}: Loom / raw rg ({loom_t * 1e3:.0f} vs "
                                 f"{rg_t * 1e3:.0f} ms)", value=ratio, unit="x",
                                 target="<= 1.3", ok=ratio <= 1.3))
                slow_t = median_time(tool_call(grep_slow, args), FALLBACK_REPEATS)
                rows.append(dict(benchmark=f"{label}: Python fallback / raw rg ({slow_t * 1e3:.0f} ms)",
                                 value=slow_t / rg_t, unit="x", target="report", ok=None))

            # glob's baseline is rg listing the tree (`rg --files`), which is the job glob
            # does before filtering and sorting by mtime. `rg --files --glob` is shown too:
            # it is quicker because a --glob match skips the .gitignore check (so it lists
            # ignored files as well), which is why Loom cannot use it.
            glob_fast, glob_slow = GlobTool(), GlobTool(use_rg=False)
            listing = raw("--files", "--null", "--", ".")
            for pattern in ("**/*.py", "pkg1*/sub/*.md"):
                args = GlobInput(pattern=pattern)
                tool_call(glob_fast, args)()
                loom_t, rg_t, ratio = paired(tool_call(glob_fast, args), listing, REPEATS)
                rows.append(dict(benchmark=f"glob `{pattern}`: Loom / raw rg --files ({loom_t * 1e3:.0f} "
                                 f"vs {rg_t * 1e3:.0f} ms)", value=ratio, unit="x",
                                 target="<= 1.5", ok=ratio <= 1.5))
                with_glob = raw("--files", "--null", "--glob", pattern, "--", ".")
                loom_t, rg_g_t, ratio = paired(tool_call(glob_fast, args), with_glob, REPEATS)
                rows.append(dict(benchmark=f"glob `{pattern}`: Loom / raw rg --files --glob "
                                 f"({loom_t * 1e3:.0f} vs {rg_g_t * 1e3:.0f} ms)", value=ratio,
                                 unit="x", target="report", ok=None))
                slow_t = median_time(tool_call(glob_slow, args), FALLBACK_REPEATS)
                rows.append(dict(benchmark=f"glob `{pattern}`: Python walker / raw rg --files "
                                 f"({slow_t * 1e3:.0f} ms)", value=slow_t / rg_t, unit="x",
                                 target="report", ok=None))

            rows.extend(_read_file_rows(loop, ctx, root / "big.txt"))
    finally:
        loop.close()
    return rows


def _read_file_rows(loop: asyncio.AbstractEventLoop, ctx: ToolContext, big: Path) -> list[dict[str, Any]]:
    from builtin_tools.read_file import ReadFileInput, ReadFileTool

    tool = ReadFileTool()

    def read(**arguments: Any) -> Callable[[], object]:
        args = ReadFileInput(path=str(big), **arguments)

        async def once() -> object:
            ctx.state.read_files.clear()
            return await tool.run(args, ctx)

        def call() -> object:
            out = loop.run_until_complete(once())
            assert not out.is_error, out.content  # type: ignore[attr-defined]
            return out
        return call

    def plain() -> object:
        with open(big, encoding="utf-8") as fh:
            return fh.read()

    rows = []
    for label, call in (("first 2,000 lines", read()),
                        ("last 1,000 lines (offset 199,001)", read(offset=BIG_FILE_LINES - 999, limit=1000))):
        call()
        tool_t, plain_t, ratio = paired(call, plain, REPEATS)
        rows.append(dict(benchmark=f"read_file, 200,000-line file, {label}: {tool_t * 1e3:.1f} ms; "
                         f"/ open().read() of the whole file ({plain_t * 1e3:.1f} ms)",
                         value=ratio, unit="x", target="report", ok=None))
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(run())
