"""Stores: one interface (a reading side and a writing side), several backends chosen by URI."""

from flightlog.store.base import (
    EventStore,
    IngestResult,
    MetadataReader,
    MetadataStore,
    Store,
    StoreReader,
    StoreWriter,
)
from flightlog.store.registry import open_store, register

__all__ = [
    "EventStore",
    "IngestResult",
    "MetadataReader",
    "MetadataStore",
    "Store",
    "StoreReader",
    "StoreWriter",
    "open_store",
    "register",
]
