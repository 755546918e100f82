"""Keeping a repository's own git config from running programs in "read-only" git.

``git status``, ``git diff``, ``git log`` and ``git show`` read the repository's config,
and several of its keys name programs git then runs: ``core.fsmonitor`` on every status,
clean filters and textconv drivers on status and diff, ``diff.external``, lazy fetches in
a partial clone (``core.sshCommand``, ``remote.*.uploadpack``), gpg programs... A folder
the model wrote, or a repository shipped with the project, can set them.

Two layers:

* :func:`git_environment` is applied to every bash call. It overrides, through the
  ``GIT_CONFIG_COUNT`` command-line scope (which beats every config file), the keys that
  can be turned off without changing what a command means: ``core.fsmonitor=false``
  (speed only), ``safe.bareRepository=explicit`` (a folder laid out as a bare
  repository is never picked up implicitly) and ``core.hooksPath`` pointed at the null
  device, where no hook can be found or planted: a repository's hooks (``.git/hooks``,
  or husky's ``.husky`` through its own ``core.hooksPath``) are its author's programs,
  and ``git diff`` runs ``post-index-change`` whenever it refreshes the index (a file
  whose stat changed since the commit). ``GIT_OPTIONAL_LOCKS=0`` keeps ``git status``
  from writing the index at all.
* :func:`repository_doubt` is asked before a read-only git command is auto-allowed: the
  repository's own config (local and worktree scope, includes followed, submodules too,
  since ``git status`` runs their clean filters) may only hold keys known to name no
  program. Anything else asks. The user's own (system, global) config is trusted.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

# Set for every bash call; later command-line entries win, so ours come after the user's.
NEUTRAL_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("safe.bareRepository", "explicit"),
    # Not a folder: git finds no hook there, and nothing can create one.
    ("core.hooksPath", os.devnull),
)
_UNTRUSTED_SCOPES = frozenset({"local", "worktree"})
_SCAN_TIMEOUT_S = 5.0
_MAX_REPOSITORIES = 64
_MAX_DEPTH = 4

# Keys (as git prints them: section and last part lower-cased) that hold data only.
_SAFE_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
    "core.safecrlf", "core.quotepath", "core.sparsecheckout", "core.sparsecheckoutcone",
    "core.untrackedcache", "core.fsmonitor",  # neutralised by NEUTRAL_CONFIG
    "core.commitgraph", "core.splitindex", "core.checkstat", "core.trustctime", "core.abbrev",
    "core.whitespace", "core.compression", "core.preloadindex", "core.longpaths",
    "core.bigfilethreshold", "core.warnambiguousrefs", "core.protecthfs", "core.protectntfs",
    "extensions.objectformat", "extensions.worktreeconfig",
    "user.name", "user.email", "user.signingkey", "init.defaultbranch", "pull.rebase",
    "pull.ff", "push.default", "push.autosetupremote", "rebase.autostash", "rerere.enabled",
    "fetch.prune", "gc.auto", "index.version", "feature.manyfiles", "status.showuntrackedfiles",
    "status.short", "status.branch", "diff.renames", "diff.algorithm", "diff.mnemonicprefix",
    "diff.noprefix", "diff.colormoved", "diff.submodule", "log.decorate", "log.abbrevcommit",
    "log.date", "merge.ff", "merge.conflictstyle", "commit.gpgsign", "tag.gpgsign",
    "include.path",  # what an include brings in is listed (and checked) with its own keys
    # Overridden by NEUTRAL_CONFIG (no hook runs); husky and co. set this one.
    "core.hookspath",
    # Attribute files can only pick drivers; the programs are config keys checked here.
    "core.attributesfile", "core.excludesfile",
    "maintenance.auto", "maintenance.strategy", "fetch.writecommitgraph",
})
_SAFE_PATTERNS = tuple(re.compile(p) for p in (
    r"remote\.[^\n]+\.(url|fetch|pushurl|push|tagopt|prune|mirror|skipdefaultupdate)",
    r"branch\.[^\n]+\.(remote|merge|rebase|pushremote|description)",
    r"submodule\.[^\n]+\.(url|active|branch|ignore)",
    r"diff\.[^\n]+\.(xfuncname|funcname|wordregex|binary|cachetextconv)",
    r"includeif\.[^\n]+\.path",
    r"(color|advice)\.[^\n]+",
))


def git_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus the settings every bash call runs with (see the module doc)."""
    out = dict(env)
    out.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0",
                "GIT_OPTIONAL_LOCKS": "0"})
    raw = env.get("GIT_CONFIG_COUNT", "").strip()
    try:
        count = int(raw) if raw else 0
    except ValueError:
        return out  # git refuses to run at all with a bogus count; leave it to say so
    if count < 0:
        return out
    for offset, (key, value) in enumerate(NEUTRAL_CONFIG):
        out[f"GIT_CONFIG_KEY_{count + offset}"] = key
        out[f"GIT_CONFIG_VALUE_{count + offset}"] = value
    out["GIT_CONFIG_COUNT"] = str(count + len(NEUTRAL_CONFIG))
    return out


def key_is_safe(key: str) -> bool:
    return key in _SAFE_KEYS or any(p.fullmatch(key) for p in _SAFE_PATTERNS)


Inside = Callable[[Path], bool]


def repository_doubt(git: str, cwd: Path, inside: Inside = lambda path: False,
                     env: Mapping[str, str] | None = None) -> str:
    """Why a read-only git command run by ``git`` (an absolute path) in ``cwd`` could run
    a program named by the repository's config, or '' when it cannot. ``inside`` says
    whether a folder is in the workspace (a ``core.worktree`` must be, as in submodules)."""
    run_env = git_environment(os.environ if env is None else env)
    seen: set[str] = set()
    return _scan(git, cwd, run_env, seen, 0, inside)


def _scan(git: str, cwd: Path, env: dict[str, str], seen: set[str], depth: int,
          inside: Inside) -> str:
    if len(seen) >= _MAX_REPOSITORIES or depth > _MAX_DEPTH:
        return "the repository has too many nested submodules to check"
    listed = _git(git, cwd, env, "config", "--list", "--show-scope", "--show-origin", "-z")
    if isinstance(listed, str):
        return listed
    tokens = listed.split(b"\0")
    for scope, origin, entry in zip(tokens[::3], tokens[1::3], tokens[2::3], strict=False):
        if scope.decode("utf-8", "replace") not in _UNTRUSTED_SCOPES:
            continue
        key, _, value = os.fsdecode(entry).partition("\n")
        if key == "core.worktree" and _worktree_inside(cwd, os.fsdecode(origin), value, inside):
            continue
        if not key_is_safe(key):
            return (f"the repository's git config sets {key!r}, which may name a program git "
                    "would run or a folder outside the workspace")
    top = _git(git, cwd, env, "rev-parse", "--show-toplevel")
    if isinstance(top, str) or not top.strip():
        return ""  # not in a work tree: nothing else to look at (a bare repo was refused)
    toplevel = Path(os.fsdecode(top.strip()))
    if str(toplevel) in seen:
        return ""
    seen.add(str(toplevel))
    staged = _git(git, toplevel, env, "ls-files", "--stage", "-z")
    if isinstance(staged, str):
        return staged
    for record in staged.split(b"\0"):
        if not record.startswith(b"160000 "):
            continue  # only gitlinks (submodules): `git status` runs git inside them
        path = toplevel / os.fsdecode(record.split(b"\t", 1)[1])
        if os.path.lexists(path / ".git"):
            doubt = _scan(git, path, env, seen, depth + 1, inside)
            if doubt:
                return f"submodule {path.relative_to(toplevel)}: {doubt}"
    return ""


def _worktree_inside(cwd: Path, origin: str, value: str, inside: Inside) -> bool:
    """Whether a ``core.worktree`` (relative to the folder of the config file setting it)
    names a folder inside the workspace."""
    if not origin.startswith("file:") or not value:
        return False
    config_dir = os.path.dirname(os.path.join(cwd, origin[len("file:"):]))
    return inside(Path(os.path.realpath(os.path.join(config_dir, value))))


def _git(git: str, cwd: Path, env: dict[str, str], *args: str) -> bytes | str:
    """stdout, or a one-line reason why git could not answer."""
    try:
        done = subprocess.run([git, *args], cwd=cwd, env=env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=_SCAN_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"could not read the repository's git config ({exc})"
    if done.returncode != 0:
        if args[0] == "rev-parse":
            return ""
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"git could not read the repository here ({first[0] if first else done.returncode})"
    return done.stdout
