"""Artifact tools: inspect, report, diff, check, review, audit."""
