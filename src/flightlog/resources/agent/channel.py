"""Files through which the ranks' watches and ``flightlog run`` meet, in one directory the
runner makes per attempt (``FLIGHTLOG_HANG_DIR``).

Per process (``PID`` its process id):

* ``agent-PID.json`` — the watch announces itself: its rank as far as it knows it, host, pid,
  the signal its faulthandler answers and the file it writes to (rewritten when the rank
  becomes known: Lightning's first process learns it only when the process group forms);
* ``ev-PID-N.json`` — one record the watch hands over (``{"kind", "name", "data"}``), written
  whole then renamed into place, so the runner never reads half a file; ``ev-PID-N.raw`` beside
  it holds the raw Flight Recorder dump the evidence had to shorten;
* ``req-PID`` — the runner asks for evidence now (its text is the reason); the watch deletes it;
* ``fh-PID.txt`` — faulthandler's dumps when the runner sends the signal.

Files are the channel because they need nothing from the process they are written from (no
socket, no thread of the runner's in the workload) and outlive either side. At most
``MAX_PENDING`` records wait per process: when the runner stopped reading, the watch stops
writing and counts what it left out, it never fills the disk.
"""

from __future__ import annotations

import _thread
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FileChannel", "MAX_PENDING", "agent_file", "request_file", "faulthandler_file"]

MAX_PENDING = 200


def agent_file(directory: str, pid: int) -> str:
    return os.path.join(directory, f"agent-{pid}.json")


def request_file(directory: str, pid: int) -> str:
    return os.path.join(directory, f"req-{pid}")


def faulthandler_file(directory: str, pid: int) -> str:
    return os.path.join(directory, f"fh-{pid}.txt")


def _dumps(data: dict[str, Any]) -> str:
    """``json.dumps(data, default=str)``; a flat object of names, numbers and strings (what a
    process announces at start-up) is written here without importing ``json``, whose ``re`` and
    ``enum`` would cost every workload the bootstrap enters a few milliseconds of start-up."""
    try:
        return "{" + ", ".join(f"{_string(k)}: {_scalar(v)}" for k, v in data.items()) + "}"
    except _NotFlat:
        import json

        return json.dumps(data, default=str)


class _NotFlat(Exception):
    pass


_ESCAPES = {**{i: f"\\u{i:04x}" for i in range(0x20)}, ord('"'): '\\"', ord("\\"): "\\\\"}


def _string(value: Any) -> str:
    if type(value) is not str or not value.isascii():
        raise _NotFlat  # json's own escaping for the rest (ensure_ascii, lone surrogates)
    return '"' + value.translate(_ESCAPES) + '"'


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float and value - value == 0:  # finite: json writes NaN and Infinity its own way
        return repr(value)
    return _string(value)


def _write_whole(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


class FileChannel:
    """One process's side of the directory (see the module docstring)."""

    def __init__(self, directory: str, pid: int | None = None) -> None:
        self.directory = directory
        self.pid = pid if pid is not None else os.getpid()
        self._seq = 0
        self._lock = _thread.allocate_lock()
        self.dropped = 0
        self._announced: dict[str, Any] | None = None

    @property
    def request_file(self) -> str:
        return request_file(self.directory, self.pid)

    @property
    def faulthandler_file(self) -> str:
        return faulthandler_file(self.directory, self.pid)

    def announce(self, identity: dict[str, Any], **extra: Any) -> None:
        """Say who this process is (again when its identity changed)."""
        data = {**identity, **extra}
        if data == self._announced:
            return
        self._announced = data
        _write_whole(agent_file(self.directory, self.pid), _dumps(data))

    def deliver(self, kind: str, name: str, data: dict[str, Any], raw: str | None = None) -> None:
        """Hand one record to the runner; beyond ``MAX_PENDING`` unread ones it is counted, not written."""
        with self._lock:
            if self._pending() >= MAX_PENDING:
                self.dropped += 1
                return
            self._seq += 1
            base = os.path.join(self.directory, f"ev-{self.pid}-{self._seq:06d}")
            doc: dict[str, Any] = {"kind": kind, "name": name, "data": data}
            if self.dropped:
                doc["dropped_before"] = self.dropped
            if raw is not None:
                _write_whole(base + ".raw", raw)
                doc["raw"] = os.path.basename(base + ".raw")
            _write_whole(base + ".json", _dumps(doc))

    def _pending(self) -> int:
        prefix = f"ev-{self.pid}-"
        try:
            return sum(1 for n in os.listdir(self.directory) if n.startswith(prefix) and n.endswith(".json"))
        except OSError:
            return MAX_PENDING  # the directory is gone: nobody reads
