"""Input adapters: raw sources to the canonical tick stream."""

from ..contracts.media import (
    get_media_provider,
    register_media_provider,
    registered_media_providers,
)
from .base import (
    InputAdapter,
    adapter_from_dict,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from .lerobot import LeRobotAdapter
from .mcap import McapAdapter
from .timenet import TimenetAdapter
from .timeseries import TimeseriesAdapter
from .video import JoinedMediaAdapter, VideoAdapter

__all__ = [
    "InputAdapter",
    "JoinedMediaAdapter",
    "LeRobotAdapter",
    "McapAdapter",
    "TimenetAdapter",
    "TimeseriesAdapter",
    "VideoAdapter",
    "adapter_from_dict",
    "get_adapter",
    "get_media_provider",
    "register_adapter",
    "register_media_provider",
    "registered_adapters",
    "registered_media_providers",
]
