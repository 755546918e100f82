"""Loom's settings: defaults < user config.toml < .loom/settings.toml <
.loom/settings.local.toml < environment (LOOM_PROVIDER, LOOM_MODEL) < command-line flags."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o", "scripted": "scripted"}


class ConfigError(Exception):
    """A config file or value that is wrong; the message names the file and the problem."""


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None


class PermissionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: Literal["anthropic", "openai", "scripted"] | None = None
    model: str | None = None
    max_turns: int = Field(100, ge=1)
    max_tokens: int = Field(8192, ge=1)
    compact_threshold: float = Field(0.92, ge=0.1, le=1.0)
    context_window: int | None = Field(None, ge=1024)
    thinking_budget: int | None = Field(None, ge=1024)
    redact_secrets: bool = True
    permission_mode: Literal["default", "accept-edits", "plan", "bypass"] = "default"
    # Seconds a model stream may stay silent before the attempt counts as stalled and is
    # retried: before its first event, and between two events.
    stream_first_byte_timeout: float = Field(60.0, gt=0)
    stream_idle_timeout: float = Field(30.0, gt=0)
    anthropic: ProviderSettings = Field(default_factory=ProviderSettings)
    openai: ProviderSettings = Field(default_factory=ProviderSettings)
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)


def settings_files(workspace: Path, user_config_file: Path) -> list[Path]:
    return [user_config_file, workspace / ".loom" / "settings.toml", workspace / ".loom" / "settings.local.toml"]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at "
                          f"position {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror}") from None


def load_settings(workspace: Path, user_config_file: Path) -> Settings:
    merged: dict[str, Any] = {}
    for path in settings_files(workspace, user_config_file):
        if not path.exists():
            continue
        data = _read_toml(path)
        try:
            Settings.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"{path}: {where}: {first['msg']}") from None
        for key, value in data.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
    env_overrides = {"provider": os.environ.get("LOOM_PROVIDER"), "model": os.environ.get("LOOM_MODEL")}
    for key, value in env_overrides.items():
        if value:
            merged[key] = value
    try:
        return Settings.model_validate(merged)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"LOOM_{where.upper()}: {first['msg']}") from None


def choose_provider(settings: Settings, flag: str | None) -> str:
    if flag:
        return flag
    if settings.provider:
        return settings.provider
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL") or settings.openai.base_url:
        return "openai"
    return "anthropic"
