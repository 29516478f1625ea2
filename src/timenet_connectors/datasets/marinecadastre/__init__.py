"""Connectors for AIS data published by MarineCadastre.gov (BOEM/NOAA)."""
