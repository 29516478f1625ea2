"""Run machinery every runtime shares: scoring, the named hours steps, staging, summaries."""
