"""The disk-backed runtime: checkpointed partitions, a DuckDB index and candidates on disk."""
