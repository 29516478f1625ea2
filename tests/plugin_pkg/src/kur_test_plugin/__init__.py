"""Test plugin for kuration's entry-point discovery."""
