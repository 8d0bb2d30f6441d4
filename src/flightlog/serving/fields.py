"""Which input fields a sampled prediction record keeps, and how a decorated function's
arguments become fields. What is kept of them (scrubbed, keyed hashes) is privacy.py's.

Why hashes and not nothing: a hash of a field lets one join two records of the same customer
or find every prediction for one input without storing the value (an email, an account
number). Why an allow-list and not a deny-list: a new field in the request is then hashed by
default, never stored because nobody thought to deny it. A secret-named field (``password``,
``api_key``) cannot be put on the allow-list at all: that is refused in ``attach()``, before
anything is recorded.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.redaction.names import is_secret_name

__all__ = ["check_allow_list", "call_inputs"]


def check_allow_list(fields: Any, *, where: str = "attach(inputs=...)") -> frozenset[str]:
    """The allow-list as a set of names; InvalidInput naming the entry that is wrong."""
    if fields is None:
        return frozenset()
    if isinstance(fields, str) or not isinstance(fields, Iterable):
        raise InvalidInput(
            f"{where}: the input allow-list must be a list of field names, such as ['amount', 'country'], "
            f"got {type(fields).__name__}"
        )
    names: set[str] = set()
    for field in fields:
        if not isinstance(field, str) or not field.strip():
            raise InvalidInput(
                f"{where}: {field!r} is not a field name: each entry of the allow-list is a non-empty string"
            )
        if is_secret_name(field):
            raise InvalidInput(
                f"{where}: the field {field!r} looks like a secret and cannot be on the allow-list "
                "(it would be stored in clear); leave it off and its sha256 is recorded instead"
            )
        names.add(field)
    return frozenset(names)


def call_inputs(func: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """How a decorated function's arguments become input fields: one mapping argument is the
    input itself (``predict({"amount": 3})``); otherwise the arguments by parameter name."""
    try:
        sig: inspect.Signature | None = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None

    def fields(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], Mapping):
            return args[0]
        if sig is not None:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                pass
            else:
                named = dict(bound.arguments)
                named.pop("self", None)
                if len(named) == 1 and isinstance(next(iter(named.values())), Mapping):
                    return next(iter(named.values()))
                return named
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}

    return fields
