"""Connectors for OpenSky Network ADS-B data."""
