"""``flightlog.logging_handler()``: structured JSON lines on stdout, recorded on the run.

Each record becomes one JSON object per line — timestamp, level, component (logger name),
message, run id, project, rank, attempt, the current stage and the record's extra fields —
written to stdout, and the same event is recorded on the active run. Under ``flightlog run``
(``FLIGHTLOG_CAPTURED=1``) the handler only writes the line: the runner captures and records
it, so each event is stored once; so it does when ``init()``'s console capture records the
stream it writes to (``sdk/console.py``).

Works with structlog's standard-library integration: a record whose ``msg`` is structlog's
event dict contributes its ``event`` as the message and its other keys as fields.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from typing import IO, Any

import msgspec

from flightlog.sdk.console import capturing
from flightlog.timefmt import iso

__all__ = ["FlightlogHandler", "logging_handler"]

# attributes every LogRecord has; anything else on a record came from `extra=`
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()) | {"message", "asctime", "taskName"}
_encoder = msgspec.json.Encoder()


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


class FlightlogHandler(logging.Handler):
    """``echo=False`` records without writing the JSON line: a model server's logs already go
    where its own handlers send them, and a second, unredacted copy of each line on stdout (what
    a container platform keeps) would undo the redaction and cost a write per request."""

    def __init__(
        self,
        run: Any = None,
        stream: IO[str] | None = None,
        level: int = logging.NOTSET,
        *,
        record: bool | None = None,
        echo: bool = True,
    ) -> None:
        super().__init__(level)
        self._run = run
        self._stream = stream
        self._record = record
        self._echo = echo

    def _target_run(self) -> Any:
        if self._run is not None:
            return self._run
        from flightlog.sdk.api import active_run

        return active_run()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            run = self._target_run()
            message, fields = self._message_and_fields(record)
            if record.exc_info and record.exc_info[0] is not None:
                fields["exception"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
            stage = run.current_stage if run is not None else None
            obj: dict[str, Any] = {
                "timestamp": iso(record.created),
                "level": record.levelname.lower(),
                "component": record.name,
                "message": message,
            }
            if run is not None:
                obj.update(run_id=run.id, project=run.project, attempt=run.attempt)
                rank = run._w.rank
                if rank is not None:
                    obj["rank"] = rank
            if stage is not None:
                obj["stage"] = stage
            for key, value in fields.items():
                obj.setdefault(key, value)
            stream = self._stream or sys.stdout
            if self._echo:
                stream.write(_encoder.encode(obj).decode() + "\n")
                stream.flush()
            if self._record is not None:
                record_it = self._record
            elif not self._echo:
                record_it = True  # nothing written, so no capture of a stream can record it
            else:
                record_it = os.environ.get("FLIGHTLOG_CAPTURED") != "1" and not capturing(stream)
            if run is not None and record_it:
                run.log_event(
                    message, level=record.levelno, component=record.name, fields=fields or None, time=record.created
                )
        except Exception:
            self.handleError(record)

    @staticmethod
    def _message_and_fields(record: logging.LogRecord) -> tuple[str, dict[str, Any]]:
        fields = {k: _jsonable(v) for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}
        msg = record.msg
        if isinstance(msg, dict):  # structlog's ProcessorFormatter.wrap_for_formatter
            event = dict(msg)
            message = str(event.pop("event", ""))
            for key in ("level", "logger", "timestamp", "_record", "_from_structlog"):
                event.pop(key, None)
            fields.update({str(k): _jsonable(v) for k, v in event.items()})
            return message, fields
        return record.getMessage(), fields


def logging_handler(
    run: Any = None, *, stream: IO[str] | None = None, level: int = logging.NOTSET, echo: bool = True
) -> FlightlogHandler:
    """A handler for ``logging`` that writes JSON lines to stdout and records them on the run
    (the active run when ``run`` is None); ``echo=False`` only records them."""
    return FlightlogHandler(run=run, stream=stream, level=level, echo=echo)
