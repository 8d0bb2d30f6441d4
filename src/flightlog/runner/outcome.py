"""How a workload ended → status, end reason and exit code: the table in docs/architecture.md ("How a run ends"), in one place.

| how it ended                      | status    | end_reason  | exit code |
| exit 0                            | succeeded | exit        | 0         |
| exit N ≠ 0                        | failed    | exit        | N         |
| killed for memory                 | failed    | oom_killed  | 137       |
| runner --timeout                  | failed    | timeout     | 124       |
| SIGINT (Ctrl-C)                   | stopped   | signal      | 130       |
| SIGTERM or SIGKILL from outside   | killed    | signal      | 143 / 137 |
"""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass

__all__ = ["Outcome", "outcome_of"]


@dataclass(frozen=True)
class Outcome:
    status: str
    end_reason: str
    exit_code: int
    signal: int | None

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


def outcome_of(returncode: int, *, timed_out: bool = False, oom_killed: bool = False) -> Outcome:
    """``returncode`` as subprocess reports it (negative: killed by that signal)."""
    sig = -returncode if returncode < 0 else None
    if timed_out:
        return Outcome("failed", "timeout", 124, sig)
    if oom_killed:
        return Outcome("failed", "oom_killed", 137, sig or _signal.SIGKILL)
    if returncode == 0:
        return Outcome("succeeded", "exit", 0, None)
    if sig is None:
        return Outcome("failed", "exit", returncode, None)
    if sig == _signal.SIGINT:
        return Outcome("stopped", "signal", 128 + sig, sig)
    return Outcome("killed", "signal", 128 + sig, sig)
