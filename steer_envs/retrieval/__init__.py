"""Search backends behind one :class:`Retriever` protocol, built from spec strings."""

from .base import MAX_K, Hit, Retriever, check_query
from .registry import RETRIEVERS, RetrieverContext, make_retriever, register_retriever

__all__ = [
    "MAX_K",
    "RETRIEVERS",
    "Hit",
    "Retriever",
    "RetrieverContext",
    "check_query",
    "make_retriever",
    "register_retriever",
]
