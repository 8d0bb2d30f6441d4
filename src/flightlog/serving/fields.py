"""What a sampled prediction record keeps of a request: the input fields on the allow-list as
they are, a sha256 of every other field, and the output.

Why hashes and not nothing: a hash of a field lets one join two records of the same customer
or find every prediction for one input without storing the value (an email, an account
number). Why an allow-list and not a deny-list: a new field in the request is then hashed by
default, never stored because nobody thought to deny it. A secret-named field (``password``,
``api_key``) cannot be put on the allow-list at all: that is refused in ``attach()``, before
anything is recorded.

Runs on the background thread (sha256 and JSON cost microseconds each, never on the request).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.redaction.names import is_secret_name

__all__ = ["MAX_VALUE_CHARS", "check_allow_list", "split_inputs", "jsonable_output", "call_inputs", "digest"]

MAX_VALUE_CHARS = 2048  # an allow-listed value or an output longer than this as JSON is kept as its hash


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


def digest(value: Any) -> str:
    """sha256 of a value's canonical JSON (sorted keys), hex; the same value hashes the same everywhere."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _small_json(value: Any) -> Any:
    """``value`` when it is JSON-safe and small; else a marker with its hash and size."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        text = json.dumps(value, separators=(",", ":"), default=str)
        value = json.loads(text)
    if len(text) > MAX_VALUE_CHARS:
        return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}
    return value


def split_inputs(inputs: Any, allow: frozenset[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(allow-listed fields as given, {other field: sha256}); a non-mapping input is one field, ``input``."""
    if not isinstance(inputs, Mapping):
        if inputs is None:
            return {}, {}
        inputs = {"input": inputs}
    kept: dict[str, Any] = {}
    hashed: dict[str, str] = {}
    for key, value in inputs.items():
        name = str(key)
        if name in allow:
            kept[name] = _small_json(value)
        else:
            hashed[name] = digest(value)
    return kept, hashed


def jsonable_output(output: Any) -> Any:
    """An output as a record keeps it (JSON, bounded); numpy scalars and arrays as numbers and lists."""
    if hasattr(output, "tolist"):
        try:
            output = output.tolist()
        except Exception:  # noqa: BLE001 - an odd object: its repr below
            pass
    return _small_json(output)


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
