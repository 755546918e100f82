"""Each list of names the engine checks input against is its Literal type's own
arguments, in order: one place to add a name, and the order users see kept."""

from typing import Any, get_args

import pytest

from loom_engine.hooks.config import HOOK_EVENTS, HookEventName
from loom_engine.permissions.modes import MODES, PermissionMode
from loom_engine.providers.base import ERROR_KINDS, ProviderErrorKind
from loom_engine.providers.names import PROVIDERS, ProviderName
from loom_engine.sandbox.config import NETWORK_MODES, SANDBOX_MODES, NetworkMode, SandboxMode


@pytest.mark.parametrize(("names", "literal"), [
    (MODES, PermissionMode), (PROVIDERS, ProviderName), (SANDBOX_MODES, SandboxMode),
    (NETWORK_MODES, NetworkMode), (HOOK_EVENTS, HookEventName),
])
def test_list_is_its_type_in_order(names: tuple[str, ...], literal: Any) -> None:
    assert names == get_args(literal)


def test_the_user_facing_orders() -> None:
    assert MODES == ("default", "accept-edits", "plan", "bypass")  # Shift+Tab's cycle
    assert NETWORK_MODES == ("off", "allowlist", "on")  # narrowest first, as --help lists them
    assert PROVIDERS == ("anthropic", "openai", "scripted")


def test_provider_error_kinds_include_every_kind_a_provider_classifies() -> None:
    assert ERROR_KINDS == frozenset(get_args(ProviderErrorKind))
    assert {"request_too_large", "context_length", "config", "stream_broken"} <= ERROR_KINDS
