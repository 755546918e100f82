"""OS confinement for every command Loom runs for the model or for a project.

``config`` holds what the user chose (one place for the modes), ``status`` what this
machine can do; the backends (bubblewrap, Landlock) and the command wrapper live beside
them. Importing this package is cheap: nothing here starts a process at import.
"""

from .config import NETWORK_MODES, SANDBOX_MODES, NetworkMode, SandboxConfig, SandboxMode
from .status import SandboxStatus

__all__ = ["NETWORK_MODES", "SANDBOX_MODES", "NetworkMode", "SandboxConfig", "SandboxMode", "SandboxStatus"]
