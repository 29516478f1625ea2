"""Built-in connectors, one package per ``<org>/<name>``."""
