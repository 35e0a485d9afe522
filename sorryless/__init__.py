"""sorryless: shared pieces (configuration, logging, CLI, Lean environment set-up)."""

from sorryless.config import Settings
from sorryless.errors import ConfigError, SorrylessError

__version__ = "0.1.0"

__all__ = ["ConfigError", "Settings", "SorrylessError", "__version__"]
