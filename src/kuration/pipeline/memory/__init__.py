"""The in-memory runtime's own part: ranking a scored pool held in memory (the count path)."""
