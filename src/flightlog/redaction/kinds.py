"""The record kinds that may hold strings a user gave (without importing the rules)."""

from __future__ import annotations

__all__ = ["USER_STRING_KINDS"]

#: Record kinds whose user strings ``userstrings.redact_record`` redacts. ``logs`` is not
#: among them: log events are redacted where they are formed (``Run.log_event``, the capture
#: pipeline), and at server ingest only when their writer does not redact.
USER_STRING_KINDS = frozenset({"params", "tags", "note", "context", "run", "writer_end", "evidence"})
