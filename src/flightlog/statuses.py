"""A run's statuses and the groups every reader sorts them into, defined once.

The lifecycle is ``created → queued → running → succeeded | failed | stopped | killed | crashed``
(docs/architecture.md, "How a run ends"). The SDK, the runner, the store's queries, diagnosis,
alerts and the pipeline controller each ask one of a few questions of a status ("has it ended?",
"did it fail?"); each question is one group here, so that a new status is added in one place.
Tuples keep the lifecycle order, because error messages list them to the user.
"""

from __future__ import annotations

__all__ = [
    "STATUSES",
    "ACTIVE_STATUSES",
    "OWNED_STATUSES",
    "TERMINAL_STATUSES",
    "UNSUCCESSFUL_STATUSES",
    "FAILED_STATUSES",
    "ERROR_STATUSES",
    "INTERRUPTED_STATUSES",
    "EXITED_STATUSES",
    "SIGNALLED_STATUSES",
    "sql_list",
]

STATUSES: tuple[str, ...] = ("created", "queued", "running", "succeeded", "failed", "stopped", "killed", "crashed")
"""Every status a run can have, in lifecycle order (the ``status`` field's valid values)."""

ACTIVE_STATUSES: tuple[str, ...] = STATUSES[:3]
"""Not ended yet: created, queued or running. A run in one of these may still change."""

OWNED_STATUSES: tuple[str, ...] = ("created", "running")
"""A process on some host holds the run (a queued run waits for one): if that process is gone,
the run was lost and reads as crashed."""

UNSUCCESSFUL_STATUSES: tuple[str, ...] = ("failed", "crashed", "killed", "stopped")
"""Ended without succeeding, for whatever reason (diagnosis looks for a cause in these)."""

TERMINAL_STATUSES: frozenset[str] = frozenset({"succeeded", *UNSUCCESSFUL_STATUSES})
"""Ended: a run in one of these changes again only if it is resumed."""

FAILED_STATUSES: tuple[str, ...] = ("failed", "crashed", "killed")
"""Ended by a fault: what a failure count, an alert or a failed span counts. A stopped run was
stopped on purpose, so it is not one of them."""

ERROR_STATUSES: tuple[str, ...] = ("failed", "crashed")
"""Ended by an error of its own (an exception, a non-zero exit) or lost with its process, rather
than ended by a signal; the log's traceback and the last memory samples explain these."""

INTERRUPTED_STATUSES: tuple[str, ...] = ("stopped", "killed", "crashed")
"""Ended before its own code finished: stopped, killed by a signal, or lost (a pipeline step that
had not started never ran because of it)."""

EXITED_STATUSES: tuple[str, ...] = ("succeeded", "failed")
"""Ended by its own exit, zero or not (or an uncaught exception): the end reason is ``exit``."""

SIGNALLED_STATUSES: tuple[str, ...] = ("stopped", "killed")
"""Ended by a signal (a stop request or a kill): the end reason is ``signal``."""


def sql_list(statuses: tuple[str, ...] | frozenset[str]) -> str:
    """A group as an SQL list literal, ``('failed','crashed','killed')``, for a query's ``IN``.

    Only these fixed words go into it (never user input), so no quoting beyond the literal's."""
    return "(" + ",".join(f"'{s}'" for s in sorted(statuses, key=STATUSES.index)) + ")"
