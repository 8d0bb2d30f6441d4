"""What distributed launchers add to a job's output, read as it is.

A launcher runs several processes (ranks) and merges their output into one stream. Some of them
mark every line with the rank that printed it, and they end a failed job with a summary of
their own. Both must be read before anything else reads the output:

* **Line prefixes** name the rank and must come off before a line is parsed, or a rank's
  traceback is not a traceback (every line starts with ``[rank0]: ``) and two ranks' tracebacks
  interleave into one. The forms: torch's ``[rank3]: `` (printed by the rank itself since
  torch 2.2, also before C++ warnings: ``[rank3]:[W1205 …]``); torchrun's ``--tee``/
  ``--redirects`` ``[default3]:`` (role name and LOCAL rank; nested with the former:
  ``[default1]:[rank1]: ``); ``mpirun --tag-output``'s ``[1,3]<stdout>:`` (job, rank);
  ``srun --label``'s ``3: `` (task id, padded to the widest) — which ordinary output can
  look like, so it is read only when the caller knows the launcher labels lines
  (``labels=True``), or, for a whole block, when every line of it carries one; and
  pdsh's ``host: `` (DeepSpeed's multi-node launcher), only for a whole block whose lines all
  share it and hold a traceback.
* **The elastic agent's failure summary** (torchrun, Accelerate, anything on
  ``torch.distributed.elastic``): the ``ChildFailedError`` block with a ``Root Cause (first
  observed failure)`` and other ``Failures``, each a rank's exit code (negative: a signal),
  pid, host, error file and traceback. It is evidence of how each rank ended — never metrics
  (``exitcode : 1``, ``local_rank: 0``, ``pid: 1234``) — and its "root cause" is only the first
  exit the agent saw: a rank that timed out waiting for a stuck one often exits first.
* **DeepSpeed's launcher** ends with one line per rank: ``[launch.py:321:sigkill_handler]
  ['python', '-u', 'train.py', '--local_rank=1', …] exits with return code = -9``.
* **Messages of ranks that only waited** (:data:`VICTIM_MESSAGES`): gloo's "Timed out waiting
  … for recv", "Connection closed by peer … a remote worker crashing", the NCCL watchdog's
  collective timeout, "remote process exited": the consequences of another rank's failure.

Everything here is a pure function of text, cheap enough for the capture pipeline: a chunk
without a launcher's marks costs one ``in`` test per form.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "LinePrefix",
    "RankExit",
    "RankError",
    "ElasticSummary",
    "VICTIM_MESSAGES",
    "split_launcher_prefix",
    "read_prefix",
    "has_launcher_marks",
    "strip_launcher_prefixes",
    "parse_elastic_summary",
    "parse_deepspeed_exits",
    "read_error_file",
    "is_victim_message",
    "is_signal_notice",
    "is_launcher_log",
    "launcher_of",
]

#: torch's own ``[rank3]:`` (optionally right before a C++ log line's ``[W…]``), elastic's tee
#: ``[default3]:`` (the usual role names), mpirun's ``[1,3]<stdout>:``
_BRACKETED = re.compile(
    r"\[(?:rank(?P<rank>\d{1,6})\]|(?P<role>[A-Za-z_][\w-]{0,30}?)(?P<local>\d{1,6})\]"
    r"|\d{1,9},(?P<mpi>\d{1,6})\]<std(?:out|err)>):[ ]?"
)
_SRUN = re.compile(r"[ ]{0,5}(\d{1,6}): ")
_ROLE_NAMES = frozenset({"default", "trainer", "worker", "rank"})


class LinePrefix(NamedTuple):
    """What a line's launcher prefixes say: the global rank (None: not named), the local rank
    (elastic's ``[default1]:`` names only that), and the line without them."""

    rank: int | None
    local_rank: int | None
    text: str


def read_prefix(line: str, *, labels: bool = False) -> LinePrefix:
    """The launcher prefixes at the start of ``line`` (nested ones too), or ``(None, None, line)``.

    ``labels``: the launcher numbers every line (``srun --label``), so a leading ``3: `` is a
    task id and not the line's own text."""
    rank = local = None
    text = line
    if labels:
        m = _SRUN.match(text)
        if m:
            rank = int(m[1])
            text = text[m.end() :]
    while text.startswith("["):
        m = _BRACKETED.match(text)
        if m is None:
            break
        if m["rank"] is not None:  # [rank3]:
            rank = int(m["rank"])
        elif m["mpi"] is not None:  # [1,3]<stdout>:
            rank = int(m["mpi"])
        elif m["role"] in _ROLE_NAMES:  # [default3]: a role and the LOCAL rank
            local = int(m["local"])
        else:
            break  # "[step3]:" and the like: the program's own text
        text = text[m.end() :]
    if rank is None and local is None:
        return LinePrefix(None, None, line)
    return LinePrefix(rank if rank is not None else local, local, text)


def split_launcher_prefix(line: str, *, labels: bool = False) -> tuple[int | None, str]:
    """``(rank, line without its prefixes)``; the rank is the global one when the line names it,
    else the local one (``[default1]:`` alone); ``(None, line)`` when there is no prefix."""
    p = read_prefix(line, labels=labels)
    return p.rank, p.text


#: the substrings whose absence proves a chunk has no bracketed launcher prefix
_MARKS = ("[rank", "[default", "[trainer", "[worker", "]<stdout>:", "]<stderr>:")


def has_launcher_marks(text: str) -> bool:
    """Whether ``text`` may hold a bracketed launcher prefix (a cheap test before reading lines)."""
    return any(mark in text for mark in _MARKS)


_PDSH = re.compile(r"^([A-Za-z0-9][\w.-]{0,62}): ")


def strip_launcher_prefixes(text: str) -> str:
    """``text`` with every line's launcher prefixes taken off (a whole block: a traceback a
    rank printed, a failure message quoted from a job's log).

    ``srun --label``'s ``3: `` and pdsh's ``host: `` are only taken off when every non-empty
    line of the block carries one (and, for pdsh, the same host and a traceback in it): in a
    single line they are indistinguishable from the program's own text."""
    lines = text.split("\n")
    if has_launcher_marks(text):
        lines = [read_prefix(line).text for line in lines]
    body = [line for line in lines if line.strip()]
    if len(body) >= 2 and all(_SRUN.match(line) for line in body):
        lines = [_SRUN.sub("", line, count=1) if line.strip() else line for line in lines]
    elif len(body) >= 2:
        hosts = {m[1] for line in body if (m := _PDSH.match(line))}
        if (
            len(hosts) == 1
            and all(_PDSH.match(line) for line in body)
            and any(line.split(": ", 1)[1].startswith(("Traceback", "  File ")) for line in body)
        ):
            lines = [_PDSH.sub("", line, count=1) if line.strip() else line for line in lines]
    return "\n".join(lines)


# ── the elastic agent's summary ──────────────────────────────────────────────
@dataclass
class RankExit:
    """One rank's end as a launcher reported it."""

    rank: int | None
    local_rank: int | None = None
    host: str | None = None
    exit_code: int | None = None  # the process's exit status; None when it died of a signal
    signal: int | None = None
    pid: int | None = None
    error_file: str | None = None
    traceback: str | None = None  # the rank's own traceback, when the launcher had it
    time: str | None = None  # as the launcher printed it (its host's local time)
    root_cause: bool = False  # the launcher called it the first observed failure

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "host": self.host,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "pid": self.pid,
            "error_file": self.error_file,
            "traceback": self.traceback,
            "time": self.time,
            "root_cause": self.root_cause,
        }


@dataclass
class ElasticSummary:
    """A launcher's account of a failed job: every rank it reported, the root cause first."""

    launcher: str
    script: str | None = None
    ranks: list[RankExit] = field(default_factory=list)

    @property
    def root_cause(self) -> RankExit | None:
        return next((r for r in self.ranks if r.root_cause), None)

    def to_dict(self) -> dict[str, Any]:
        return {"launcher": self.launcher, "script": self.script, "ranks": [r.to_dict() for r in self.ranks]}


_CHILD_FAILED = "ChildFailedError"
_RULE = re.compile(r"^\s*(?:={20,}|-{20,})\s*$")
_ENTRY = re.compile(r"^\s*\[(\d+)\]:\s*$")
_FIELD = re.compile(r"^  (time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
_RANK_FIELD = re.compile(r"^(-?\d+)(?:\s*\(local_rank:\s*(-?\d+)\))?")
_EXIT_FIELD = re.compile(r"^(-?\d+)(?:\s*\(pid:\s*(\d+)\))?")
_SCRIPT = re.compile(r"^(\S.*?) FAILED\s*$")
_NO_TRACEBACK = ("To enable traceback see", "<N/A>")


def parse_elastic_summary(text: str) -> ElasticSummary | None:
    """The ``ChildFailedError`` summary of torchrun (and of every launcher on
    ``torch.distributed.elastic``: Accelerate, Lightning's when it uses torchrun) in ``text``,
    or None. A negative exit code is the signal that ended the rank (``-15``: SIGTERM)."""
    if _CHILD_FAILED not in text or "Failures:" not in text:
        return None
    lines = strip_launcher_prefixes(text[text.rindex(_CHILD_FAILED) :]).split("\n")
    summary = ElasticSummary("torchrun")
    section = ""
    current: RankExit | None = None
    in_traceback: list[str] | None = None

    def close() -> None:
        nonlocal current, in_traceback
        if current is not None:
            if in_traceback is not None:
                tb = "\n".join(line[2:] if line.startswith("  ") else line for line in in_traceback).strip()
                current.traceback = tb or None
            summary.ranks.append(current)
        current, in_traceback = None, None

    for line in lines[1:]:
        if m := _SCRIPT.match(line):
            if summary.script is None and not line.startswith(" "):
                summary.script = m[1]
            continue
        if line.startswith("Root Cause"):
            close()
            section = "root"
            continue
        if line.startswith("Failures:"):
            close()
            section = "failures"
            continue
        if _RULE.match(line):
            close()
            continue
        if m := _ENTRY.match(line):
            close()
            current = RankExit(rank=None, root_cause=section == "root")
            continue
        if current is None:
            continue
        fm = _FIELD.match(line)
        if fm and (in_traceback is None or fm[1] != "traceback"):
            if in_traceback is not None:  # a field after the traceback: it ended
                in_traceback = None
            key, value = fm[1], fm[2].strip()
            if key == "time":
                current.time = value
            elif key == "host":
                current.host = value
            elif key == "rank" and (rm := _RANK_FIELD.match(value)):
                current.rank = int(rm[1])
                current.local_rank = int(rm[2]) if rm[2] is not None else None
            elif key == "exitcode" and (em := _EXIT_FIELD.match(value)):
                code = int(em[1])
                if code < 0:
                    current.signal = -code
                else:
                    current.exit_code = code
                current.pid = int(em[2]) if em[2] else None
            elif key == "error_file":
                current.error_file = None if value in ("<N/A>", "") else value
            elif key == "traceback" and not value.startswith(_NO_TRACEBACK):
                in_traceback = [value]
            continue
        if in_traceback is not None:
            in_traceback.append(line)
    close()
    return summary if summary.ranks else None


_DEEPSPEED_EXIT = re.compile(
    r"\[launch\.py:\d+:sigkill_handler\]\s*\[(?P<cmd>.*)\] exits with return code = (?P<code>-?\d+)"
)
_LOCAL_RANK_ARG = re.compile(r"--local_rank[=' ,]+(\d+)")


def parse_deepspeed_exits(lines: Iterable[str]) -> ElasticSummary | None:
    """DeepSpeed's launcher's last words: one ``… exits with return code = N`` line per rank it
    saw end (the rank from the command's ``--local_rank``); the first is its root cause."""
    summary = ElasticSummary("deepspeed")
    for line in lines:
        m = _DEEPSPEED_EXIT.search(line)
        if m is None:
            continue
        code = int(m["code"])
        rm = _LOCAL_RANK_ARG.search(m["cmd"])
        local = int(rm[1]) if rm else None
        summary.ranks.append(
            RankExit(
                rank=local,
                local_rank=local,
                exit_code=code if code >= 0 else None,
                signal=-code if code < 0 else None,
                root_cause=not summary.ranks,
            )
        )
    return summary if summary.ranks else None


@dataclass
class RankError:
    """A ``TORCHELASTIC_ERROR_FILE`` (written by ``@record``): the rank's exception and traceback."""

    message: str
    traceback: str | None
    timestamp: float | None
    error_code: int | None = None


def read_error_file(path: str | os.PathLike[str]) -> RankError | None:
    """The error file torch's ``@record`` writes for a failed rank, or None when it is missing,
    not JSON, or not of that shape (a launcher's file from another version: never raises)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            data = json.loads(fh.read(4_000_000))
    except (OSError, ValueError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, str):  # a file written with a plain message
        return RankError(message, None, None)
    if not isinstance(message, dict):
        return None
    raw = message.get("extraInfo")
    extra: dict[str, Any] = raw if isinstance(raw, dict) else {}
    stamp = extra.get("timestamp")
    try:
        timestamp = float(stamp) if stamp is not None else None
    except (TypeError, ValueError):
        timestamp = None
    code = message.get("errorCode")
    return RankError(
        str(message.get("message") or ""),
        str(extra["py_callstack"]) if extra.get("py_callstack") else None,
        timestamp,
        code if isinstance(code, int) else None,
    )


#: what a rank prints when it only waited for another one: the failure is elsewhere
VICTIM_MESSAGES = re.compile(
    r"Timed out waiting \d+ ?ms for (?:recv|send) operation to complete"
    r"|Connection closed by peer"
    r"|typically caused by a remote worker crashing"
    r"|Watchdog caught collective operation timeout"
    r"|Some NCCL operations have failed or timed out"
    r"|remote process exited or there was a network error"
    r"|ncclRemoteError"
    r"|Connection reset by peer.{0,80}(?:gloo|pair\.cc)"
    r"|(?:gloo|c10d).{0,120}(?:Application timeout caused pair closure|Read error)"
    r"|failed to recv, got 0 bytes"
    r"|NCCL communicator was aborted"
    r"|ProcessGroup(?:NCCL|Gloo)?\b.{0,80}\btimed? ?out"
    r"|Received \d+ death signal, shutting down workers"
    r"|Sending process \d+ closing signal SIG(?:TERM|INT|KILL)",
    re.IGNORECASE,
)


def is_victim_message(text: str) -> bool:
    """Whether ``text`` is what a rank says when it only waited for (or was stopped because of)
    another rank: a collective or receive that timed out, a peer that closed the connection."""
    return VICTIM_MESSAGES.search(text) is not None


#: what torchrun's summary puts in a worker's ``traceback`` field when a signal ended it: its
#: end, already in ``exitcode : -15``, not an error the worker raised
_SIGNAL_NOTICE = re.compile(r"^\s*Signal \d+ \(SIG[A-Z0-9+]+\) received by PID \d+\s*$")


def is_signal_notice(text: str) -> bool:
    """Whether ``text`` only says that a signal ended a worker (torchrun's "Signal 15 (SIGTERM)
    received by PID 1234"): the worker's end, never its own error."""
    return _SIGNAL_NOTICE.match(text) is not None


#: a line the elastic agent (torchrun, Accelerate's launcher) logs itself: glog's
#: ``W1206 14:05:27.237000 4812 torch/distributed/run.py:874] …`` (torch ≥ 2.4) or logging's
#: ``WARNING:torch.distributed.run:…`` (before)
_LAUNCHER_LOG = re.compile(
    r"^(?:[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*torch/distributed/(?:run|launch|launcher|elastic)\b[^\]]*\]"
    r"|[A-Z]+:torch\.distributed\.(?:run|launch|launcher|elastic)\b)"
)


def is_launcher_log(line: str) -> bool:
    """Whether ``line`` is the launcher's own log (its "Setting OMP_NUM_THREADS" banner, its
    agent's restarts), not a rank's output: the launcher printing says nothing of when the
    workload's own code began."""
    return _LAUNCHER_LOG.match(line) is not None


_LAUNCHERS = (
    ("torchrun", re.compile(r"(?:^|/)torchrun$|torch\.distributed\.(?:run|launch)$")),
    ("accelerate", re.compile(r"(?:^|/)accelerate$")),
    ("deepspeed", re.compile(r"(?:^|/)deepspeed$|deepspeed\.launcher")),
    ("srun", re.compile(r"(?:^|/)srun$")),
    ("mpirun", re.compile(r"(?:^|/)(?:mpirun|mpiexec|orterun)$")),
)


def launcher_of(command: list[str]) -> tuple[str | None, bool]:
    """``(launcher, labels)``: which launcher a command starts (its first words, past ``env``
    and ``python -m``), and whether it numbers every line (``srun --label`` / ``-l``)."""
    words = list(command)
    while words and (words[0] == "env" or "=" in words[0] and not words[0].startswith("-")):
        words.pop(0)
    if len(words) >= 3 and os.path.basename(words[0]).startswith("python") and words[1] == "-m":
        words = [words[2], *words[3:]]
    if not words:
        return None, False
    head = words[0]
    for name, pattern in _LAUNCHERS:
        if pattern.search(head):
            labels = name == "srun" and any(w in ("-l", "--label") for w in words[1:])
            return name, labels
    return None, False
