"""The closed metric grammar."""

from .compile import CompiledMetric, compile_metric
from .grammar import parse_metric

__all__ = ["CompiledMetric", "compile_metric", "parse_metric"]
