"""Metrics: the closed metric grammar (``dsl``) and the FeatureEngine with registered metrics."""
