"""The streaming runtime: out-of-core hours runs in two lazy passes over each source."""
