"""Command-line tools (thin wrappers over the public API)."""
