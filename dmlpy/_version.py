"""The package version and the native ABI version; the native build stamps both into the C module."""

__version__ = "0.1.0"
NATIVE_ABI_VERSION = 3
