"""What an editor may switch in a session: Loom's permission modes (ACP's session
modes) and the model (a ``model`` config option: the SDK 0.12 has no set_model)."""

from __future__ import annotations

from collections.abc import Mapping

from loom_engine.permissions.modes import MODES, PermissionMode
from loom_engine.providers.models import known_models, lookup

from .sdk import SessionConfigOptionSelect, SessionConfigSelectOption, SessionMode, SessionModeState

MODEL_OPTION = "model"

# How a mode reads in an editor's mode menu (the modes themselves: loom_engine/permissions/modes.py).
_MODE_WORDS: Mapping[PermissionMode, tuple[str, str]] = {
    "default": ("Default", "Reads in the workspace run; edits and commands ask."),
    "accept-edits": ("Accept edits", "Edits in the workspace run too; commands ask."),
    "plan": ("Plan", "Read-only: anything that writes or runs is refused."),
    "bypass": ("Bypass permissions", "Everything runs without asking (deny and ask rules still apply)."),
}


def offered_modes(bypass_allowed: bool) -> tuple[PermissionMode, ...]:
    """bypass only when the agent was started with it by name, as the chat's Shift+Tab."""
    return tuple(mode for mode in MODES if mode != "bypass" or bypass_allowed)


def mode_state(current: PermissionMode, bypass_allowed: bool) -> SessionModeState:
    return SessionModeState(current_mode_id=current, available_modes=[
        SessionMode(id=mode, name=_MODE_WORDS[mode][0], description=_MODE_WORDS[mode][1])
        for mode in offered_modes(bypass_allowed)])


def model_option(provider: str, current: str) -> SessionConfigOptionSelect:
    """The provider's models Loom knows (all when it knows none of them), the current one first."""
    names = [info.name for info in known_models() if info.provider == provider] or \
            [info.name for info in known_models() if info.provider == lookup(current).provider]
    ordered = [current, *(name for name in names if name != current)]
    return SessionConfigOptionSelect(type="select", id=MODEL_OPTION, name="Model", category="model",
                                     current_value=current,
                                     options=[SessionConfigSelectOption(value=name, name=name) for name in ordered])
