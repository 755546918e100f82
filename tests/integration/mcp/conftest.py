"""The real MCP reference servers, installed once per test session."""

from __future__ import annotations

import pytest

from tests.doubles.mcp_servers import ReferenceServers, install


@pytest.fixture(scope="session")
def reference_servers() -> ReferenceServers:
    try:
        return install()
    except (RuntimeError, OSError) as error:  # no registry here: say so rather than fail
        pytest.skip(f"the MCP reference servers could not be installed: {error}")
