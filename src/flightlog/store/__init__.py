"""Stores: one interface (metadata + events), several backends chosen by URI."""

from flightlog.store.base import EventStore, IngestResult, MetadataStore, Store
from flightlog.store.registry import open_store, register

__all__ = ["EventStore", "IngestResult", "MetadataStore", "Store", "open_store", "register"]
