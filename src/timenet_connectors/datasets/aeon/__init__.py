"""Connectors for data shipped with the aeon toolkit."""
