"""The rg binary: finding it, the flags that make it agree with :func:`.walk.walk`, and
running it with bounded output, killed on abort."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loom_engine.execution import CancelToken

from .globs import PathGlob

# The flags that make rg select exactly the files :func:`.walk.walk` yields.
RG_WALK_ARGS: tuple[str, ...] = (
    "--no-config",  # a user's RIPGREP_CONFIG_PATH must not change results
    "--hidden",
    "--glob", "!.git",
    "--no-ignore-dot",  # .ignore / .rgignore: not part of Loom's rules
    "--no-ignore-global",  # core.excludesFile would need git config to mirror
    "--no-ignore-exclude",  # .git/info/exclude: same
)


# `*.py`, `*.{ts,tsx}`: the globs rg may take as --glob (see rg_filter_args).
_EXTENSION_GLOB = re.compile(r"\*\.(?:[\w+-]+|\{[\w+-]+(?:,[\w+-]+)*\})")
RG_GLOB_TYPE = "loomglob"


@dataclass(frozen=True)
class RgFilter:
    """How rg is told to narrow a search to a glob's file names."""

    args: tuple[str, ...] = ()
    recheck_ignored: bool = False  # rg's --glob let ignored files through
    exact: bool = False  # rg selects exactly the glob's files: no need to match again


def rg_filter_args(glob: PathGlob) -> RgFilter:
    """rg arguments that narrow a search to ``glob``'s file names.

    rg's ``--glob`` is the quick way, but a file it matches skips the ignore rules and a
    matching folder is entered even when ignored. For an extension glob such folders
    are rare, so that is used and the results re-checked with :class:`.ignore.IgnoreChecker`.
    Any other name glob becomes a one-off file type, which rg applies after its ignore
    rules: slower, but a glob such as `*` or `test_*` can never send rg into an ignored
    folder.
    """
    name = glob.rg_prefilter()
    if name is None:
        return RgFilter()
    # `*.py` and `**/*.py` both mean "this file name at any depth", as rg's filter does.
    exact = glob.text == "**/" + name or (glob.basename_only and glob.text == name)
    if _EXTENSION_GLOB.fullmatch(name):
        return RgFilter(("--glob", name), recheck_ignored=True, exact=exact)
    return RgFilter(("--type-add", f"{RG_GLOB_TYPE}:{name}", "--type", RG_GLOB_TYPE), exact=exact)


def find_rg() -> str | None:
    """The rg binary from the ripgrep wheel (the venv's scripts folder) or the PATH."""
    candidates = [
        Path(sys.executable).parent / "rg",
        Path(sysconfig.get_path("scripts")) / "rg",
        Path(sys.prefix) / "bin" / "rg",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("rg")


@dataclass(frozen=True)
class RgRun:
    returncode: int
    stdout: bytes
    stderr: str
    truncated: bool  # stdout passed max_bytes and rg was stopped


# How often a running search's output size is checked against its cap.
OUTPUT_CHECK_INTERVAL = 0.05


class SearchCancelled(Exception):
    """The run was aborted while rg was searching."""


async def run_rg(
    rg: str,
    args: list[str],
    cwd: Path | str,
    cancel: CancelToken,
    max_bytes: int = 64 * 1024 * 1024,
    pass_fds: tuple[int, ...] = (),
) -> RgRun:
    """Run rg, keeping at most ``max_bytes`` of its output; killed on abort.

    rg writes into an unnamed temporary file rather than a pipe: a pipe wakes the
    event loop for each of the thousands of small writes rg makes (one per file),
    which cost more than the search itself on a large result. The file's size is
    watched so that a runaway search is still stopped early.
    """
    with tempfile.TemporaryFile(prefix="loom-rg-") as out:
        proc = await asyncio.create_subprocess_exec(
            rg, *args, cwd=os.fspath(cwd), pass_fds=pass_fds,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stderr is not None
        exited = asyncio.ensure_future(proc.wait())
        errors = asyncio.ensure_future(proc.stderr.read())
        aborted = asyncio.ensure_future(cancel.wait())
        truncated = False
        try:
            while not exited.done():
                await asyncio.wait({exited, aborted}, timeout=OUTPUT_CHECK_INTERVAL,
                                   return_when=asyncio.FIRST_COMPLETED)
                if aborted.done() and not exited.done():
                    raise SearchCancelled(cancel.reason)
                if not exited.done() and os.fstat(out.fileno()).st_size > max_bytes:
                    truncated = True
                    _kill(proc)
                    await exited
            stderr = await errors
            returncode = exited.result()
        except BaseException:
            _kill(proc)
            errors.cancel()
            await proc.wait()
            raise
        finally:
            aborted.cancel()
        out.seek(0)
        stdout = out.read(max_bytes + 1)
    truncated = truncated or len(stdout) > max_bytes
    return RgRun(returncode, stdout[:max_bytes] if truncated else stdout,
                 stderr.decode("utf-8", "replace"), truncated)


_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def rg_path(raw: bytes) -> str:
    """A path as rg prints it, relative and without rg's ``./`` prefix.

    os.fsdecode, minus its Python-level overhead: this runs once per result."""
    return (raw[2:] if raw.startswith(b"./") else raw).decode(_FS_ENCODING, _FS_ERRORS)


def rg_paths(output: bytes) -> list[str]:
    """The NUL-separated paths of complete rg output, as :func:`rg_path` gives them.
    (Decoded in one piece: the split points are NULs, which no path contains.)"""
    text = output.decode(_FS_ENCODING, _FS_ERRORS)
    return [p[2:] if p.startswith("./") else p for p in text.split("\0") if p]


async def stream_rg_paths(
    rg: str,
    args: list[str],
    cwd: Path | str,
    cancel: CancelToken,
    consume: Callable[[list[str]], None],
    pass_fds: tuple[int, ...] = (),
) -> int:
    """Run rg printing NUL-separated paths, handing each batch to ``consume`` in a
    worker thread while rg is still walking, so that per-file work (a stat for each
    glob result) overlaps the walk. Returns rg's exit code; killed on abort."""
    proc = subprocess.Popen(
        [rg, *args], cwd=os.fspath(cwd), pass_fds=pass_fds,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    output = proc.stdout

    def pump() -> int:
        rest = b""
        while chunk := os.read(output.fileno(), 1 << 16):
            complete, _, rest = (rest + chunk).rpartition(b"\0")
            if complete:
                consume(rg_paths(complete))
        if rest:
            consume(rg_paths(rest))
        return proc.wait()

    pumping = asyncio.ensure_future(asyncio.to_thread(pump))
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({pumping, aborted}, return_when=asyncio.FIRST_COMPLETED)
        if not pumping.done():
            raise SearchCancelled(cancel.reason)
    finally:
        aborted.cancel()
        if proc.poll() is None:
            proc.kill()  # which also ends the worker's read
        if not pumping.done():
            await asyncio.wait({pumping})  # never close the pipe under a reading thread
        output.close()
        proc.wait()  # reaps rg; immediate once it has exited or been killed
    return pumping.result()


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
