"""A user's answer to a permission request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Decision = Literal["allow_once", "allow_session", "allow_project", "deny"]


@dataclass(frozen=True)
class PermissionAnswer:
    decision: Decision
    # With "deny": a note passed to the model ("use the existing helper instead").
    note: str | None = None

    @property
    def allowed(self) -> bool:
        return self.decision != "deny"
