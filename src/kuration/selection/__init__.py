"""Selection: binning, strategies, methods, filters, tag floors, group caps, splits and the
hours fill. It reads features by name and never compiles metrics."""

from . import dedup as _dedup  # noqa: F401  (registers the built-in dedup filters)
from . import whole_source as _whole_source  # noqa: F401  (registers whole_source)
