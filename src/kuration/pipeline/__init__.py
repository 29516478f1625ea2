"""Orchestration: job files, the feature pass, the count run and the hours run."""
