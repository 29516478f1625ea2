"""Input adapters: raw sources to the canonical tick stream."""

from .base import (
    InputAdapter,
    adapter_from_dict,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from .timenet import TimenetAdapter
from .timeseries import TimeseriesAdapter

__all__ = [
    "InputAdapter",
    "TimenetAdapter",
    "TimeseriesAdapter",
    "adapter_from_dict",
    "get_adapter",
    "register_adapter",
    "registered_adapters",
]
