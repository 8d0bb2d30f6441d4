"""Names a package offers but imports only when first used: one helper for every package's
``__getattr__`` (PEP 562), instead of a hand-written loader in each.

Why lazily at all: the feature table imports each feature's package in every run's process,
and ``import flightlog`` is paid by every training script, so a package that names its heavy
parts (numpy, the data stack, an HTTP client, the controller of a pipeline) must not import
them until a program asks for one. Why one helper: each hand-written loader got a detail of
its own wrong (one cached the value, the next did not; one listed its names for ``dir()``,
the next forgot); and the homes written as data are what ``scripts/import_graph.py`` reads,
so that a lazy import is still an edge of the import graph and no cycle hides behind one.

    __getattr__, __dir__ = lazy_attributes(__name__, {"Client": ".client", "step": ".pipeline"})

A home is a module, absolute (``flightlog.pipeline.define``) or relative to the package
(``.define``). The value is kept in the package once loaded, so the next use is a plain
attribute read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, homes: Mapping[str, str], *, eager: tuple[str, ...] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the module ``package``, for the names in ``homes``
    (name -> the module it lives in). ``eager``: names the module defines itself, listed by
    ``dir()`` beside the lazy ones."""
    table = dict(homes)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        home = table.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        sys.modules[package].__dict__[name] = value  # loaded once: the next read is a plain one
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*table, *eager, *sys.modules[package].__dict__})

    return __getattr__, __dir__
