"""Live profiles: the profile of ``flightlog data profile``, fed one batch of live rows at a time
(``LiveProfile``), and kept per time bucket so a window is a merge of a few small profiles
(``WindowedProfile``). Split from ``live.py`` (drift, the training run's evidence, cohorts),
which re-exports both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from flightlog.data.liverows import PredictionRow
from flightlog.data.livetypes import TypeCounts, merge_counts, one_type_per_field, successful
from flightlog.data.profiling import Profile, _Builder, _merge_into
from flightlog.data.stats import EXACT_VALUES_LIMIT, MAX_CATEGORIES
from flightlog.errors import InvalidInput
from flightlog.timefmt import iso

__all__ = ["LiveProfile", "WindowedProfile"]


class LiveProfile:
    """A profile built batch by batch from rows of inputs (mappings of field to value).

    ``features`` limits it to those fields (others are ignored); by default every field seen.
    Mergeable (``a.merge(b)``); memory bounded by the profile's own caps: per numeric field a
    quantile sketch of at most 4,096 buckets and up to 1,000 exact values, per categorical
    field up to 1,000 counted values.

    Rows of requests that failed (a :class:`PredictionRow` with a non-2xx status) are skipped
    and counted (``failed``); a field whose values mix types is profiled as its majority type,
    the others counted per field and type (``set_aside``; ``types`` has every value's type).
    """

    def __init__(
        self,
        features: Sequence[str] | None = None,
        *,
        relative_accuracy: float = 0.01,
        exact_limit: int = EXACT_VALUES_LIMIT,
        max_categories: int = MAX_CATEGORIES,
    ) -> None:
        self.features = list(features) if features else None
        self._builder = _Builder(relative_accuracy, exact_limit, max_categories, None)
        self.start: float | None = None
        self.end: float | None = None
        self.failed = 0  # rows of failed requests, not profiled
        self.types: TypeCounts = {}  # field → type → values seen
        self.set_aside: TypeCounts = {}  # field → type → values not of the field's type, not profiled

    @property
    def rows(self) -> int:
        return self._builder.profile.row_count

    @property
    def profile(self) -> Profile:
        """The profile so far (a live object: later updates change it)."""
        return self._builder.profile

    def update(self, rows: Iterable[Mapping[str, Any] | PredictionRow]) -> None:
        """Add a batch: mappings of inputs, or :class:`PredictionRow`\\ s (their inputs and times)."""
        import pyarrow as pa

        batch: list[dict[str, Any]] = []
        for r in rows:
            if isinstance(r, PredictionRow):
                if not successful(r.status):
                    self.failed += 1
                    continue
                self._seen(r.time)
                inputs: Mapping[str, Any] = r.inputs
            elif isinstance(r, Mapping):
                inputs = r
            else:
                raise InvalidInput(f"a live row must be a mapping of inputs or a PredictionRow, got {type(r).__name__}")
            if self.features is not None:
                batch.append({k: inputs.get(k) for k in self.features})
            else:
                batch.append({str(k): _plain(v) for k, v in inputs.items()})
        if not batch:
            return
        batch = one_type_per_field(batch, self.types, self.set_aside, self._builder.profile.columns)
        try:
            table = pa.Table.from_pylist(batch)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # pragma: no cover - one type per field by now
            raise InvalidInput(f"live rows could not be profiled ({exc})") from None
        for rb in table.to_batches():
            self._builder.feed(rb)

    def _seen(self, t: float) -> None:
        self.start = t if self.start is None else min(self.start, t)
        self.end = t if self.end is None else max(self.end, t)

    def merge(self, other: LiveProfile) -> LiveProfile:
        """A new LiveProfile of the rows of both."""
        out = LiveProfile(self.features)
        out._builder.profile = self.profile.merge(other.profile)
        for t in (self.start, self.end, other.start, other.end):
            if t is not None:
                out._seen(t)
        out._counts_of(self, other)
        return out

    def _counts_of(self, *parts: LiveProfile) -> None:
        for part in parts:
            self.failed += part.failed
            self.types = merge_counts(self.types, part.types)
            self.set_aside = merge_counts(self.set_aside, part.set_aside)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.profile.to_dict(),
            "window": {"start": iso(self.start), "end": iso(self.end)},
            "failed": self.failed,
            "types": self.types,
            "set_aside": self.set_aside,
        }


def _plain(v: Any) -> Any:
    """Nested values (a list of tokens, a dict) are profiled as their text."""
    return str(v) if isinstance(v, dict | list | tuple) else v


class WindowedProfile:
    """Profiles of the rows of the last ``window`` seconds, kept per ``bucket`` of time.

    Rows are profiled once, into the bucket of their time; :meth:`profile` merges the buckets
    inside the window ending at ``now``; buckets that fell out are dropped, so memory is at most
    ``window / bucket + 1`` bounded profiles.
    """

    def __init__(self, window: float, bucket: float = 60.0, features: Sequence[str] | None = None) -> None:
        if window <= 0 or bucket <= 0:
            raise InvalidInput("a live window and its bucket must be longer than 0s")
        self.window = float(window)
        self.bucket = float(min(bucket, window))
        self.features = features
        self.buckets: dict[int, LiveProfile] = {}

    def add(self, rows: Iterable[PredictionRow]) -> None:
        by_bucket: dict[int, list[PredictionRow]] = {}
        for r in rows:
            by_bucket.setdefault(math.floor(r.time / self.bucket), []).append(r)
        for key, batch in by_bucket.items():
            live = self.buckets.get(key)
            if live is None:
                live = self.buckets[key] = LiveProfile(self.features)
            live.update(batch)

    def profile(self, now: float) -> LiveProfile:
        lo = math.floor((now - self.window) / self.bucket)
        for key in [k for k in self.buckets if k < lo]:
            del self.buckets[key]
        inside = [self.buckets[k] for k in sorted(self.buckets) if k * self.bucket <= now]
        out = LiveProfile(self.features)
        if not inside:
            return out
        merged = Profile.from_dict(inside[0].profile.to_dict())  # one copy, then each bucket added in place
        for live in inside[1:]:
            _merge_into(merged, live.profile)
        out._builder.profile = merged
        for live in inside:
            for t in (live.start, live.end):
                if t is not None:
                    out._seen(t)
        out._counts_of(*inside)
        return out
