"""Connectors for the sample data shipped with kloppy (football tracking)."""
