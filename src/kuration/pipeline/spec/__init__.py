"""What a run is, as data: job files, the logical parts, the physical plan and the memory budget."""
