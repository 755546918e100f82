"""Secret redaction in tool output."""

from __future__ import annotations

import inspect
import json
import string
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom_engine.redact import redact_secrets

ALNUM = string.ascii_letters + string.digits

SAMPLES = {
    "anthropic-key": "sk-ant-api03-" + "Ab3_-" * 18,
    "openai-key": "sk-proj-" + "x9Y" * 16,
    "github-token": "ghp_" + "a1B2" * 9,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "slack-token": "xoxb-123456789012-abcdefABCDEF",
    "gitlab-token": "glpat-" + "Zz9" * 7,
    "google-api-key": "AIza" + "Sy0_" * 8 + "abc",
    "slack-webhook": "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/" + "c" * 24,
}


@pytest.mark.parametrize("kind, secret", sorted(SAMPLES.items()))
def test_keys_with_known_prefixes(kind: str, secret: str) -> None:
    out = redact_secrets(f"config: {secret}\nnext line")
    assert out == f"config: [REDACTED:{kind}]\nnext line"


@pytest.mark.parametrize("secret", [
    "sk-" + "aB3" * 16,  # legacy OpenAI
    "sk-svcacct-" + "q1" * 20,
    "ghs_" + "x" * 36, "gho_" + "y1" * 18, "github_pat_11ABC" + "d" * 60,
    "ASIAY34FZKBOKMUTVV7A", "xoxp-1-2-3-abcdef0123",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
])
def test_more_key_shapes(secret: str) -> None:
    out = redact_secrets(f"value={secret} ")
    assert secret not in out
    assert "[REDACTED:" in out


def test_private_key_blocks_go_whole() -> None:
    body = "\n".join(["MIIEowIBAAKCAQEA" + "q" * 48] * 5 + ["abcd=="])
    text = f"before\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nafter"
    assert redact_secrets(text) == "before\n[REDACTED:private-key]\nafter"
    openssh = ("-----BEGIN OPENSSH PRIVATE KEY-----\r\nb3BlbnNzaC1rZXktdjEAAAAA\r\n"
               "-----END OPENSSH PRIVATE KEY-----")
    assert redact_secrets(openssh) == "[REDACTED:private-key]"
    encrypted = ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,AB12\n\n"
                 "MIIEowIBAAKCAQEAabcdefgh\n-----END RSA PRIVATE KEY-----")
    assert redact_secrets(encrypted) == "[REDACTED:private-key]"


def test_private_key_cut_short_and_inside_json() -> None:
    truncated = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n"
    assert "MIIEvQ" not in redact_secrets(truncated)
    as_json = json.dumps({"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0\n"
                                         "-----END PRIVATE KEY-----\n", "id": 7})
    out = redact_secrets(as_json)
    assert "MIIEvQ" not in out and '"id": 7' in out and "[REDACTED:private-key]" in out


def test_a_marker_in_documentation_is_left_alone() -> None:
    doc = "Files start with '-----BEGIN RSA PRIVATE KEY-----' and end with '-----END RSA PRIVATE KEY-----'."
    assert redact_secrets(doc) == doc


@pytest.mark.parametrize("text, expected", [
    ('password = "hunter2hunter2"', 'password = "[REDACTED:secret]"'),
    ("DB_PASSWORD=s3cr3tpassw0rd99", "DB_PASSWORD=[REDACTED:secret]"),
    ("export GITHUB_TOKEN=abc123def456ghi789", "export GITHUB_TOKEN=[REDACTED:secret]"),
    ('"api_key": "k3y-value-42"', '"api_key": "[REDACTED:secret]"'),
    ("apiKey: 'f00b4r-b4z-9'", "apiKey: '[REDACTED:secret]'"),
    ("client_secret => 'abc123xyz789'", "client_secret => '[REDACTED:secret]'"),
    ("Authorization: Bearer abcdefghijklmnopqrstuvwx12345",
     "Authorization: Bearer [REDACTED:bearer-token]"),
    ("OPENAI_API_KEY=sk-proj-" + "a1" * 12, "OPENAI_API_KEY=[REDACTED:openai-key]"),
])
def test_obvious_assignments_keep_the_name(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


def test_assignments_in_a_json_transcript_line() -> None:
    line = json.dumps({"text": 'config: password = "hunter22x"'})
    assert "hunter22x" not in redact_secrets(line)


@pytest.mark.parametrize("text", [
    "token = tokens[0]",
    "password = getpass.getpass()",
    "api_key=settings.api_key_v2",
    "self.password = password",
    "secret_key = os.environ['SECRET_KEY']",
    "def token_bytes(nbytes=None):",
    "password='Password:'",
    "bypass = 'abcdef123456'",
    "PASSWORD_MIN_LENGTH = 12",
    "task-abcdefghijklmnopqrstuvwxyz0123456789abcd",
    "risk-assessment-2024-final-report-version-12345",
    "XAKIAIOSFODNN7EXAMPLEX",
    "the bearer of bad news",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c",
    "uuid = '123e4567-e89b-12d3-a456-426614174000'",
])
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact_secrets(text) == text


def test_real_python_source_is_untouched() -> None:
    import getpass
    import hmac
    import netrc
    import secrets
    import smtplib
    import urllib.request

    checked = 0
    for module in (getpass, hmac, netrc, secrets, smtplib, urllib.request, inspect, json):
        source = inspect.getsource(module)
        assert redact_secrets(source) == source, module.__name__
        checked += source.count("\n")
    assert checked > 500


def test_empty_and_plain() -> None:
    assert redact_secrets("") == ""
    assert redact_secrets("hello world") == "hello world"


SECRETS = st.one_of(
    st.text(alphabet=ALNUM + "_-", min_size=20, max_size=60).map(lambda s: "sk-ant-" + s),
    st.text(alphabet=ALNUM + "_-", min_size=20, max_size=60).map(lambda s: "sk-proj-" + s),
    st.tuples(st.sampled_from("pousr"), st.text(alphabet=ALNUM, min_size=36, max_size=40))
      .map(lambda t: f"gh{t[0]}_{t[1]}"),
    st.text(alphabet=ALNUM + "_", min_size=22, max_size=82).map(lambda s: "github_pat_" + s),
    st.tuples(st.sampled_from(["AKIA", "ASIA"]),
              st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=16))
      .map("".join),
    st.tuples(st.sampled_from("bpa"), st.text(alphabet=ALNUM + "-", min_size=10, max_size=40))
      .map(lambda t: f"xox{t[0]}-{t[1]}"),
    st.text(alphabet=ALNUM + "_-", min_size=20, max_size=30).map(lambda s: "glpat-" + s),
    st.text(alphabet=ALNUM + "_-", min_size=35, max_size=35).map(lambda s: "AIza" + s),
    st.lists(st.text(alphabet=ALNUM + "+/", min_size=64, max_size=64), min_size=1, max_size=4)
      .map(lambda lines: "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines)
           + "\n-----END PRIVATE KEY-----"),
)
SURROUNDING = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
SEPARATORS = st.sampled_from([" ", "\n", "\t", "=", ": ", "'", '"', "(", ",", " = '", "\r\n", "`"])


@settings(max_examples=2000, deadline=None)
@given(before=SURROUNDING, after=SURROUNDING, secret=SECRETS, left=SEPARATORS, right=SEPARATORS)
def test_a_generated_secret_in_random_text_never_survives(
        before: str, after: str, secret: str, left: str, right: str) -> None:
    out = redact_secrets(before + left + secret + right + after)
    assert secret not in out
    if secret.startswith("-----"):
        # Not a single line of key material may survive either.
        for line in secret.splitlines()[1:-1]:
            assert line not in out or line in before + after


@settings(max_examples=1000, deadline=None)
@given(text=st.text(alphabet=string.ascii_letters + string.digits + " _.,:;()[]{}=\n'\"", max_size=200))
def test_redaction_only_ever_replaces_with_markers(text: str) -> None:
    out = redact_secrets(text)
    if out != text:
        assert "[REDACTED:" in out
    assert redact_secrets(out) == out  # idempotent


GLUED_SECRETS = st.one_of(
    st.text(alphabet=ALNUM + "_-", min_size=20, max_size=60).map(lambda s: "sk-ant-" + s),
    st.text(alphabet=ALNUM, min_size=36, max_size=40).map(lambda s: "ghp_" + s),
    st.text(alphabet=ALNUM + "_", min_size=22, max_size=40).map(lambda s: "github_pat_" + s),
    st.text(alphabet=ALNUM + "_-", min_size=20, max_size=30).map(lambda s: "glpat-" + s),
    st.text(alphabet=ALNUM + "-", min_size=10, max_size=30).map(lambda s: "xoxb-" + s),
)


@settings(max_examples=1000, deadline=None)
@given(before=SURROUNDING, after=SURROUNDING, secret=GLUED_SECRETS)
def test_keys_with_distinctive_prefixes_go_even_when_glued_to_other_text(
        before: str, after: str, secret: str) -> None:
    assert secret not in redact_secrets(before + secret + after)


# --------------------------------------------------------------------------- Redactor

def test_a_redactor_removes_the_exact_values_it_holds_in_any_case() -> None:
    from loom_engine.redact import Redactor

    key = "Loom-Test-Key.0xZ9q/w+"  # no known shape: only the exact value can find it
    assert redact_secrets(f"KEY={key}") == f"KEY={key}"
    redactor = Redactor.for_values([key, None, "", "short"])
    for shown in (key, key.upper(), key.lower(), f"https://proxy/?key={key}",
                  "https://proxy/?key=" + urllib.parse.quote(key, safe=""), json.dumps({"k": key})):
        out = redactor.redact(f"before {shown} after")
        assert key.lower() not in out.lower() and "[REDACTED:api-key]" in out, out
    assert urllib.parse.quote(key, safe="") not in redactor.redact(urllib.parse.quote(key, safe=""))


def test_a_redactor_never_shows_its_keys_and_refuses_short_ones() -> None:
    from loom_engine.redact import Redactor

    redactor = Redactor(("abcdefgh12345678",))
    assert "abcdefgh" not in repr(redactor)
    with pytest.raises(ValueError):
        Redactor(("short",))
    assert Redactor.for_values(["short", None]) == Redactor()


def test_a_redactor_redacts_every_string_of_an_event_and_streams_lines() -> None:
    from loom_engine.redact import Redactor

    redactor = Redactor(("my-own-api-key-0001",))
    event = {"type": "tool_progress", "text": "X=my-own-api-key-0001", "n": 3,
             "input": {"argv": ["echo", "MY-OWN-API-KEY-0001"]}, "t": ("a", None)}
    assert redactor.redact_tree(event) == {"type": "tool_progress", "text": "X=[REDACTED:api-key]", "n": 3,
                                           "input": {"argv": ["echo", "[REDACTED:api-key]"]}, "t": ("a", None)}
    stream = redactor.lines()
    assert stream("key: my-own-api-key-0001") == "key: [REDACTED:api-key]"
