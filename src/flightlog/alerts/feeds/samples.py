"""Decoding resource samples for the fields the rules watch, and nothing else.

A sample is a JSON object of some thirty fields (docs/resources.md); a typed msgspec decoder
that knows only the wanted fields skips the rest without building it, which is what keeps
reading ten thousand new samples per cycle cheap.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Optional

import msgspec

from flightlog.alerts.series import SampleTable

__all__ = ["SampleDecoder"]


class SampleDecoder:
    def __init__(self, host_fields: Sequence[str], gpu_fields: Sequence[str]) -> None:
        self.host_fields = list(host_fields)
        self.gpu_fields = list(gpu_fields)
        gpu_struct = msgspec.defstruct(
            "GpuFields",
            [(f, Optional[float], None) for f in ("index", "process_memory_bytes", *self.gpu_fields)],  # noqa: UP045 - defstruct needs a runtime type
            forbid_unknown_fields=False,
        )
        fields: list[Any] = [("time", Optional[float], None)]  # noqa: UP045
        fields += [(f, Optional[float], None) for f in self.host_fields if f != "time"]  # noqa: UP045
        if self.gpu_fields:
            fields.append(("gpus", Optional[list[gpu_struct]], None))  # type: ignore[valid-type]  # noqa: UP045
        self.host_fields = [f for f in self.host_fields if f != "time"]
        self.struct = msgspec.defstruct("SampleFields", fields, forbid_unknown_fields=False)
        self.decoder = msgspec.json.Decoder(self.struct)

    def _decode(self, data: str | bytes) -> Any:
        try:
            return self.decoder.decode(data)
        except msgspec.DecodeError:
            try:  # the store writes NaN as a bare token, which strict JSON refuses
                return msgspec.convert(_lenient(json.loads(data)), self.struct)
            except (ValueError, msgspec.ValidationError):
                return None

    def table(self, records: Sequence[tuple[str, int, str | bytes]]) -> SampleTable:
        """``(run_id, sample_id, data)`` rows → the wanted fields, column by column."""
        t = SampleTable(self.host_fields, self.gpu_fields)
        decoded = [(rid, sid, self._decode(data)) for rid, sid, data in records]
        decoded = [d for d in decoded if d[2] is not None]
        if self.host_fields:
            t.host_runs = [d[0] for d in decoded]
            t.host_times = [d[2].time for d in decoded]
            for f in self.host_fields:
                t.host[f] = [getattr(d[2], f) for d in decoded]
        if self.gpu_fields:
            gpus = [(rid, sid, s.time, g) for rid, sid, s in decoded if s.gpus for g in s.gpus]
            t.gpu_runs = [g[0] for g in gpus]
            t.gpu_samples = [g[1] for g in gpus]
            t.gpu_times = [g[2] for g in gpus]
            t.gpu_index = [g[3].index for g in gpus]
            t.gpu_memory = [g[3].process_memory_bytes for g in gpus]
            for f in self.gpu_fields:
                t.gpu[f] = [getattr(g[3], f) for g in gpus]
        return t


def _lenient(value: Any) -> Any:
    """Values a typed decoder cannot take (bools, text) become None."""
    if isinstance(value, dict):
        return {k: _lenient(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lenient(v) for v in value]
    if isinstance(value, (bool, str)):
        return None
    return value
