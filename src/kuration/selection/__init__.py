"""Selection: binning, strategies, methods, filters, tag floors, group caps, splits and the
hours fill. It reads features by name and never compiles metrics."""
