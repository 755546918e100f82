"""bash: rules, compound commands, redirections, wrappers and read-only commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom_engine.permissions.modes import MODES
from loom_engine.permissions.rules import parse_rule
from loom_engine.permissions.shell import analyze

from .conftest import Env, bash


def behavior(env: Env, command: str, mode: str = "default", **rules: tuple[str, ...]) -> str:
    return bash(env.manager(mode, **rules), command).behavior


# -- rules --------------------------------------------------------------------------


def test_prefix_rule(env: Env) -> None:
    allow = ("bash(git diff:*)",)
    assert behavior(env, "git diff", allow=allow) == "allow"
    assert behavior(env, "git diff --stat HEAD~1 -- src", allow=allow) == "allow"
    assert behavior(env, "git   diff  HEAD", allow=allow) == "allow"
    assert behavior(env, "git difftool", allow=allow) == "ask"  # word boundary
    assert behavior(env, "git diff-tree HEAD", allow=allow) == "ask"
    assert behavior(env, "git", allow=allow) == "ask"


def test_exact_rule(env: Env) -> None:
    allow = ("bash(make test)",)
    assert behavior(env, "make test", allow=allow) == "allow"
    assert behavior(env, "make  'test'", allow=allow) == "allow"  # same words
    assert behavior(env, "make test-all", allow=allow) == "ask"
    assert behavior(env, "make test clean", allow=allow) == "ask"
    assert behavior(env, "make", allow=allow) == "ask"


def test_the_allow_reason_names_rule_and_source(env: Env) -> None:
    decision = bash(env.manager(allow=("bash(git diff:*)",)), "git diff")
    assert decision.reason == "rule bash(git diff:*) from cli"


@pytest.mark.parametrize("operator", ["&&", "||", ";", "|", "&", "\n", "|&"])
def test_a_prefix_rule_never_allows_a_second_command(env: Env, operator: str) -> None:
    allow = ("bash(git status:*)",)
    decision = bash(env.manager(allow=allow), f"git status {operator} rm -rf ~")
    assert decision.behavior == "ask"
    assert "rm -rf ~" in decision.reason


@pytest.mark.parametrize("command", [
    "git status $(rm -rf ~)",
    "git status `rm -rf ~`",
    'git status "$(rm -rf ~)"',
    "git status <(rm -rf ~)",
    "git status >(rm -rf ~)",
    "(rm -rf ~) && git status",
    "{ rm -rf ~; } && git status",
    "git status; (rm -rf ~)",
    "git status && { rm -rf ~; }",
    "git status <<< $(rm -rf ~)",
    "git status && if true; then rm -rf ~; fi",
])
def test_substitutions_and_groups_are_checked_too(env: Env, command: str) -> None:
    assert behavior(env, command, allow=("bash(git status:*)",)) == "ask"


def test_compound_commands_are_allowed_when_every_part_is(env: Env) -> None:
    allow = ("bash(npm test:*)", "bash(npm run build)")
    assert behavior(env, "npm test && npm run build", allow=allow) == "allow"
    assert behavior(env, "npm test | tee /dev/null; git status", allow=allow) == "ask"  # tee
    assert behavior(env, "npm test 2>&1 | grep FAIL", allow=allow) == "allow"


def test_quoted_operators_are_one_command(env: Env) -> None:
    assert behavior(env, 'echo "a && b"') == "allow"
    assert behavior(env, "echo 'a; rm -rf ~'") == "allow"
    assert behavior(env, 'grep -n "x || y" src/app.py') == "allow"
    assert behavior(env, "echo a \\&\\& rm -rf x") == "allow"


def test_wrappers_are_looked_through(env: Env) -> None:
    allow = ("bash(pytest:*)",)
    for command in ("timeout 60 pytest -q", "time pytest", "nice -n 10 pytest", "nohup pytest",
                    "timeout -k 5 120s nice pytest tests"):
        assert behavior(env, command, allow=allow) == "allow", command
    assert behavior(env, "sudo pytest", allow=allow) == "ask"
    assert behavior(env, "env pytest", allow=allow) == "ask"
    assert behavior(env, "timeout 5 git status") == "allow"  # read-only under a wrapper


def test_deny_rules_see_through_launchers(env: Env) -> None:
    deny = ("bash(rm:*)",)
    for command in ("rm -rf build", "sudo rm -rf /", "/bin/rm x", "xargs rm < list",
                    "find . -name '*.pyc' -exec rm {} \\;", "env X=1 rm y", "timeout 5 rm z",
                    "ls && rm x", "echo $(rm x)", "command rm x"):
        decision = bash(env.manager(deny=deny), command)
        assert decision.behavior == "deny", command
        assert "bash(rm:*)" in decision.reason
    assert behavior(env, "grep rm file", deny=deny) == "allow"


def test_deny_rules_and_code_the_check_cannot_see(env: Env) -> None:
    deny = ("bash(rm:*)",)
    for command in ("eval 'rm -rf x'", "source ./x.sh", "bash -c \"$X\""):
        assert behavior(env, command, "bypass", deny=deny) == "ask", command
        assert behavior(env, command, "default", deny=deny, allow=("bash",)) == "ask", command
    # The literal script of bash -c / sh -c is parsed too: the deny rule sees its rm.
    for command in ("bash -c 'rm -rf x'", "sh -c \"rm x\""):
        assert behavior(env, command, "bypass", deny=deny) == "deny", command
        assert behavior(env, command, "default", deny=deny, allow=("bash",)) == "deny", command
    # Without deny or ask rules, bypass lets them run.
    assert behavior(env, "eval 'ls'", "bypass") == "allow"


def test_ask_rules(env: Env) -> None:
    decision = bash(env.manager("bypass", ask=("bash(git push:*)",)), "git push origin main")
    assert decision.behavior == "ask"
    assert "always asks" in decision.hint
    assert decision.suggested_rules == ()


def test_bare_rules(env: Env) -> None:
    assert behavior(env, "rm -rf build", allow=("bash",)) == "allow"
    assert behavior(env, "ls", deny=("bash",)) == "deny"
    assert behavior(env, "ls", ask=("Bash",), allow=("bash(ls:*)",)) == "ask"


def test_assignments_need_a_rule_that_names_them(env: Env) -> None:
    assert behavior(env, "CI=1 npm test", allow=("bash(npm test:*)",)) == "ask"
    assert behavior(env, "CI=1 npm test", allow=("bash(CI=1 npm test:*)",)) == "allow"
    assert behavior(env, "GIT_EXTERNAL_DIFF=./x git diff") == "ask"
    assert behavior(env, "PATH=. ; ls") == "ask"


# -- read-only commands ---------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "ls", "ls -la src", "cat src/app.py", "head -n 5 src/app.py", "tail -f src/app.py",
    "wc -l src/*.py", "pwd", "echo hello", "grep -rn print src", "rg -n print", "which python",
    "find . -name '*.py' -type f", "diff src/app.py src/app.py", "stat src", "du -sh .",
    "git status", "git diff", "git log --oneline -n 5", "git show HEAD", "git --no-pager diff",
    "git status --short && git diff | head", "ls 2>/dev/null", "cat src/app.py 2>&1 | wc -l",
    "cd src && ls", "cd src && cat app.py", "grep -c x src/app.py >/dev/null 2>&1",
    "diff <(git show HEAD:src/app.py) src/app.py",
])
def test_read_only_commands_never_ask(env: Env, command: str) -> None:
    decision = bash(env.manager("default"), command)
    assert decision.behavior == "allow", decision.reason


@pytest.mark.parametrize("command", [
    "find . -exec rm {} \\;", "find . -delete", "find . -execdir cat {} +", "find . -fprint /tmp/x",
    "git diff --output=patch.txt", "git log --output=x", "git push", "git commit -m x",
    "git -c core.fsmonitor=./x status", "rg --pre ./x pat", "sort -o out.txt in.txt",
    "cat $HOME/.ssh/id_rsa", "ls {a,../..}", "echo $SECRET",
])
def test_not_read_only_commands_ask(env: Env, command: str) -> None:
    assert behavior(env, command) == "ask", command


@pytest.mark.parametrize("command", [
    "cat /etc/shadow", "cat ../outside/secret.txt", "cat link_out/secret.txt", "cat file_out",
    "ls ..", "grep -r x /etc", "head ~/.bashrc", "cd .. && cat x", "cd /tmp && ls",
    "(cd ..; ls)", "cd src; cd ../..; ls", "cat .*/x", "grep -f../pat x", "wc --files0-from=/etc/x",
    "diff src/app.py /etc/hosts", "ls > /dev/null; cd ..", "cat < /etc/passwd",
])
def test_reading_outside_through_commands_asks(env: Env, command: str) -> None:
    assert behavior(env, command) == "ask", command


def test_read_only_commands_respect_read_deny_rules(env: Env) -> None:
    (env.root / ".env").write_text("KEY=1\n")
    deny = ("read(.env)",)
    assert behavior(env, "cat .env", deny=deny) == "deny"
    assert behavior(env, "cat .env", deny=deny, allow=("bash(cat:*)",)) == "deny"
    assert behavior(env, "cat src/app.py", deny=deny) == "allow"


def test_cwd_of_the_command_is_used(env: Env) -> None:
    pm = env.manager("default")
    assert bash(pm, "cat app.py", cwd=env.root / "src").behavior == "allow"
    assert bash(pm, "cat ../../outside/secret.txt", cwd=env.root / "src").behavior == "ask"
    assert bash(pm, "cat ../app.py", cwd=env.root / "src" / "pkg").behavior == "allow"


# -- redirections -------------------------------------------------------------------


@pytest.mark.parametrize("mode, expected", [("default", "ask"), ("accept-edits", "allow"),
                                            ("plan", "deny"), ("bypass", "allow")])
def test_output_redirection_is_a_file_write(env: Env, mode: str, expected: str) -> None:
    assert behavior(env, "echo hi > notes.txt", mode) == expected
    assert behavior(env, "git log >> log.txt", mode) == expected


@pytest.mark.parametrize("command", [
    "ls 2>/dev/null", "ls >/dev/null 2>&1", "ls &>/dev/null", "ls 2>&1", "ls >&2", "ls 1>&2",
    "echo x > /dev/stderr",
])
def test_harmless_redirections(env: Env, command: str) -> None:
    assert behavior(env, command, "plan") == "allow", command


def test_redirections_outside_are_denied_unless_allowed(env: Env) -> None:
    for command in ("echo x > ../outside/f", "echo x >> link_out/f", "echo x &> /etc/x",
                    "echo x 2> ~/log", "ls > file_out"):
        assert behavior(env, command, "accept-edits") == "deny", command
    allowed = env.manager("accept-edits", allow=(f"write_file({env.outside}/**)",))
    assert bash(allowed, "echo x > ../outside/f").behavior == "allow"


def test_redirection_with_a_rule_allowed_command(env: Env) -> None:
    pm = env.manager("default", allow=("bash(make test)",))
    decision = bash(pm, "make test > build.log")
    assert decision.behavior == "ask"
    assert decision.suggested_rules == ("write_file(./build.log)",)
    assert bash(env.manager("accept-edits", allow=("bash(make test)",)),
                "make test > build.log").behavior == "allow"
    assert bash(env.manager("default", allow=("bash(make test)", "edit(*.log)")),
                "make test > build.log").behavior == "allow"


def test_redirection_to_protected_files_asks(env: Env) -> None:
    assert behavior(env, "echo '[core]' >> .git/config", "accept-edits") == "ask"
    assert behavior(env, "echo x > .loom/settings.local.toml", "bypass") == "ask"


def test_redirection_targets_that_cannot_be_known_ask(env: Env) -> None:
    assert behavior(env, "echo x > $OUT") == "ask"
    assert behavior(env, "echo x > *.txt", "accept-edits") == "ask"
    assert behavior(env, "echo x > $OUT", "plan") == "deny"


def test_here_documents_write_files_through_redirection(env: Env) -> None:
    command = "cat > notes.md <<'EOF'\n# Notes\n$(not run)\nEOF"
    assert behavior(env, command, "accept-edits") == "allow"
    assert behavior(env, command, "default") == "ask"


# -- modes --------------------------------------------------------------------------


@pytest.mark.parametrize("mode, expected", [("default", "ask"), ("accept-edits", "ask"),
                                            ("plan", "deny"), ("bypass", "allow")])
def test_modes_for_ordinary_commands(env: Env, mode: str, expected: str) -> None:
    assert behavior(env, "make test", mode) == expected


@pytest.mark.parametrize("mode", MODES)
def test_read_only_commands_run_in_every_mode(env: Env, mode: str) -> None:
    assert behavior(env, "git status && ls src", mode) == "allow"


def test_plan_mode_denies_even_allowed_commands(env: Env) -> None:
    decision = bash(env.manager("plan", allow=("bash(make test)",)), "make test")
    assert decision.behavior == "deny"
    assert "plan mode" in decision.reason


def test_doubtful_commands(env: Env) -> None:
    command = "for f in *.py; do rm $f; done"
    decision = bash(env.manager("default"), command)
    assert decision.behavior == "ask"
    assert "cannot check" in decision.reason and "for" in decision.reason
    assert decision.suggested_rules == ()
    assert behavior(env, command, "plan") == "deny"
    assert behavior(env, command, "bypass") == "allow"
    assert behavior(env, command, "default", allow=("bash(rm:*)",)) == "ask"
    assert behavior(env, command, "default", allow=("bash",)) == "allow"
    assert behavior(env, 'echo "unbalanced') == "ask"


def test_doubtful_commands_still_hit_deny_rules(env: Env) -> None:
    assert behavior(env, "rm -rf x; for f in *; do :; done", deny=("bash(rm:*)",)) == "deny"


def test_cd_inside_the_workspace(env: Env) -> None:
    assert behavior(env, "cd src") == "allow"
    assert behavior(env, "cd src && make", allow=("bash(make)",)) == "allow"
    assert behavior(env, "cd /tmp") == "ask"
    assert behavior(env, "cd - && ls") == "ask"


# -- suggestions and hints ----------------------------------------------------------


def test_a_command_word_that_looks_like_an_assignment_is_quoted_in_its_rule(env: Env) -> None:
    # `a''=` runs a command named "a=": its rule must read back as that command, not as
    # an assignment with no command (found by the property test).
    pm = env.manager("default")
    for command, rule in (("a''=", "bash('a=')"), ("X=1 'y=2' z", "bash(X=1 'y=2' z)")):
        decision = bash(pm, command)
        assert decision.suggested_rules == (rule,)
        pm.allow_for_session(decision.suggested_rules)
        assert bash(pm, command).behavior == "allow"


def test_always_allow_on_a_compound_command_saves_one_rule_per_part(env: Env) -> None:
    pm = env.manager("default")
    decision = bash(pm, "npm test && python -m pytest -q && make")
    assert decision.behavior == "ask"
    assert decision.suggested_rules == ("bash(npm test:*)", "bash(python -m pytest -q)", "bash(make)")
    assert decision.hint == ("--allow 'bash(npm test:*)' --allow 'bash(python -m pytest -q)' "
                             "--allow 'bash(make)'")
    pm.allow_for_session(decision.suggested_rules)
    assert bash(pm, "npm test && python -m pytest -q && make").behavior == "allow"
    assert bash(pm, "npm test -- --watch").behavior == "allow"


def test_read_only_parts_are_not_saved(env: Env) -> None:
    decision = bash(env.manager(), "git status && cargo build --release")
    assert decision.suggested_rules == ("bash(cargo build:*)",)


def test_suggestions_never_widen_dangerous_commands(env: Env) -> None:
    for command, rule in (("rm build", "bash(rm build)"), ("cat ../x", "bash(cat ../x)"),
                          ("git push origin", "bash(git push:*)"),
                          ("CI=1 npm test", "bash(CI=1 npm test)"),
                          ("timeout 5 npm test", "bash(npm test:*)"),
                          ("./run.sh fast", "bash(./run.sh fast:*)"),
                          ("./run.sh --fast", "bash(./run.sh --fast)")):
        assert bash(env.manager(), command).suggested_rules == (rule,), command


@pytest.mark.parametrize("command", [
    "git commit -m 'fix: the (odd) bug'", "echo $(date) > /dev/null && make x",
    "python3 -c 'print(1)'", "npm run build -- --flag=\"a b\"", "awk '{print $1}' f",
    "printf '%s\\n' a b", "touch ')'",
])
def test_suggested_rules_parse_and_then_allow_the_command(env: Env, command: str) -> None:
    pm = env.manager("default")
    decision = bash(pm, command)
    assert decision.behavior == "ask"
    for rule in decision.suggested_rules:
        parse_rule(rule)
    pm.allow_for_session(decision.suggested_rules)
    assert bash(pm, command).behavior == "allow", decision.suggested_rules


def test_headless_hints(env: Env) -> None:
    decision = bash(env.manager(), "make test > out.log")
    assert "--allow 'bash(make test:*)'" in decision.hint
    assert "--allow 'write_file(./out.log)'" in decision.hint
    assert "accept-edits" in decision.hint
    denied = bash(env.manager(deny=("bash(rm:*)",)), "rm x")
    assert denied.hint == "remove bash(rm:*) from cli"
    assert bash(env.manager("plan"), "make").hint == "--permission-mode default"


def test_empty_and_whitespace_commands(env: Env) -> None:
    assert behavior(env, "") == "allow"
    assert behavior(env, "   \n  ") == "allow"
    assert behavior(env, "# just a comment") == "allow"


def test_command_analysis_is_shared_with_the_manager(env: Env, tmp_path: Path) -> None:
    # The manager must see exactly the commands the analysis finds.
    line = "a && b | c; d $(e) `f`"
    names = sorted(c.words[0].text for c in analyze(line).commands)
    assert names == ["a", "b", "c", "d", "e", "f"]
    decision = bash(env.manager(allow=tuple(f"bash({n})" for n in "abcdf")), line)
    assert decision.behavior == "ask" and "`e`" in decision.reason


# -- what bash will really read (globs, tildes, /proc, logical cd, symlink walks) -----


@pytest.mark.parametrize("command", [
    "cat */secret.txt", "cat *", "wc -c *", "stat -L *", "echo link_out/*", "cat ~-/x",
    "cat ~+/../outside/secret.txt", "cat /proc/self/cwd/x", "grep -R s3cret .", "find -L .",
    "ls -RL", "du -L -a .", "rg --follow x", "cd link_in/../.. && ls", "ls \"link\"*",
])
def test_expansions_that_reach_outside_ask(env: Env, command: str) -> None:
    assert behavior(env, command) == "ask", command
    assert behavior(env, command, "plan") in ("ask", "deny"), command


@pytest.mark.parametrize("command", [
    "cat src/*.py", "ls src/*", "grep -r x .", "grep -R x src", "find -L src", "ls -R",
    "du -a .", "echo ~+", "cat link_in/app.py", "cd link_in && cat app.py",
])
def test_expansions_inside_still_allowed(env: Env, command: str) -> None:
    assert behavior(env, command) == "allow", command
