"""``@serving.track``: the same evidence for any Python callable, sync or async.

The call is timed with two clock reads; its return value is kept by reference for the output
distribution, its arguments only when the call is sampled; an exception counts as an error
(status 500, its type in the record) and is re-raised unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from time import perf_counter
from typing import Any, TypeVar

from flightlog.serving.fields import call_inputs
from flightlog.serving.replica import Replica, current

__all__ = ["track"]

F = TypeVar("F", bound=Callable[..., Any])


def _parser(func: Callable[..., Any]) -> Callable[[Any, Any], tuple[Any, Any, str | None]]:
    fields = call_inputs(func)

    def parse(inputs: Any, output: Any) -> tuple[Any, Any, str | None]:
        if isinstance(output, BaseException):
            return (fields(*inputs) if inputs is not None else None), None, type(output).__name__
        return (fields(*inputs) if inputs is not None else None), output, None

    return parse


def track(func: F | None = None, *, replica: Replica | None = None) -> Any:
    """``@track`` or ``@track(replica=r)``: record every call of ``func`` on the replica
    (``attach()``'s by default; without one, calls pass through unrecorded)."""
    if func is None:
        return lambda f: track(f, replica=replica)
    parse = _parser(func)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            r = replica or current()
            if r is None:
                return await func(*args, **kwargs)
            given = kwargs.pop("request_id", None) if "request_id" in kwargs and not _takes_request_id else None
            rid = r.request_id(given)  # a caller's id when valid and new (replica.request_id), else a fresh one
            start = perf_counter()
            try:
                out = await func(*args, **kwargs)
            except BaseException as exc:
                end = perf_counter()
                r.record(
                    end,
                    end - start,
                    500,
                    rid,
                    exc,
                    (args, kwargs) if r.sampled() else None,
                    parse,
                    exc,
                )
                raise
            end = perf_counter()
            r.record(end, end - start, 200, rid, out, (args, kwargs) if r.sampled() else None, parse)
            return out

        _takes_request_id = "request_id" in _parameters(func)
        return async_wrapper

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        r = replica or current()
        if r is None:
            return func(*args, **kwargs)
        given = kwargs.pop("request_id", None) if "request_id" in kwargs and not takes_request_id else None
        rid = r.request_id(given)  # a caller's id when valid and new (replica.request_id), else a fresh one
        start = perf_counter()
        try:
            out = func(*args, **kwargs)
        except BaseException as exc:
            end = perf_counter()
            r.record(end, end - start, 500, rid, exc, (args, kwargs) if r.sampled() else None, parse, exc)
            raise
        end = perf_counter()
        r.record(end, end - start, 200, rid, out, (args, kwargs) if r.sampled() else None, parse)
        return out

    takes_request_id = "request_id" in _parameters(func)
    return wrapper


def _parameters(func: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return set()
