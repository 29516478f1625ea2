"""The package version, in its own module so that code needing it never imports ``kuration``."""

__version__ = "0.1.0"
