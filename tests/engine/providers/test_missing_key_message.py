"""A missing key's message names only settings that exist: keys come from the environment."""

from __future__ import annotations

import pytest

from loom_engine.providers.base import ProviderError
from loom_engine.providers.factory import create_provider


def test_a_missing_anthropic_key_does_not_point_to_a_config_setting() -> None:
    with pytest.raises(ProviderError) as caught:
        create_provider("anthropic", env={})
    message = caught.value.message
    assert message.startswith("ANTHROPIC_API_KEY is not set")
    assert "config" not in message  # there is no api-key setting in any config file
    assert "--provider" in message and "LOOM_PROVIDER" in message
