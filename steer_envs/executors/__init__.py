"""Executors: the frozen agents under supervision, all speaking the Search-R1 text protocol."""

from .base import Executor, ExecutorContext, ExecutorError, ExecutorStats, Intervention, TurnResult
from .registry import EXECUTORS, make_executor, parse_spec, register_executor

__all__ = [
    "EXECUTORS",
    "Executor",
    "ExecutorContext",
    "ExecutorError",
    "ExecutorStats",
    "Intervention",
    "TurnResult",
    "make_executor",
    "parse_spec",
    "register_executor",
]
