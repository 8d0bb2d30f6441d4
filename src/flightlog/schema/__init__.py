"""The one record schema: every record kind that crosses a boundary, typed, checked, documented.

- `flightlog.schema.kinds`: one ``msgspec.Struct`` per kind, tagged by ``k`` (the wire's
  and the journal's field names), and :func:`register_kind` for a feature's own kinds;
- `flightlog.schema.check`: :func:`check_record`, the typed conversion plus each kind's
  ``validate()``, raising :class:`Bad` with the reason;
- `flightlog.schema.forming`: :func:`record`, how every writer forms a record;
- `flightlog.schema.values`: the values inside records (encoded series, log chunks,
  storable text, metric names, params);
- `flightlog.schema.paths`: the artifact path rule.

A bottom-layer package: it imports only errors, ids, timefmt, models and logevents.
``docs/wire-format.md`` is generated from it (``scripts/gen_wire_docs.py``).
"""

from __future__ import annotations

from flightlog.schema.bad import Bad
from flightlog.schema.check import check_record
from flightlog.schema.forming import envelope, record
from flightlog.schema.kinds import (
    KINDS,
    Record,
    kind_struct,
    known_kinds,
    record_union,
    register_kind,
)

__all__ = [
    "Bad",
    "check_record",
    "record",
    "envelope",
    "KINDS",
    "Record",
    "known_kinds",
    "kind_struct",
    "record_union",
    "register_kind",
]
