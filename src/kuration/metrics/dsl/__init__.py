"""The closed metric grammar: tokens, parser, compiler and the batched evaluator."""

from .compile import CompiledMetric, ValueType, compile_metric
from .grammar import TOKENS, TokenSpec, parse_metric

__all__ = ["TOKENS", "CompiledMetric", "TokenSpec", "ValueType", "compile_metric", "parse_metric"]
