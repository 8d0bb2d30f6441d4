"""``serving.attach()``: this process becomes one replica of an endpoint, recorded as a run.

Why a run: a replica then has, for free, the journal (evidence waits there while the server
is down), the shipper, its logs, resource samples, and liveness — a replica killed with
SIGKILL is marked ``crashed`` by the same reconciliation as a training run, and readers call it
gone. The run is named ``serve ENDPOINT@ENV`` in the model's project and tagged
``serving.endpoint``, ``serving.env``, ``serving.model``, ``serving.version`` and
``serving.replica`` (host:pid), which is how deployments find their replicas.

Everything a bad configuration can get wrong (the allow-list, the sampling rate, a token that
cannot write the project) raises here, before the run exists: nothing is recorded half.
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import re
import secrets
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.errors import InvalidInput, NotFound, StoreUnavailable
from flightlog.models import KIND_TAG, SERVING_KIND
from flightlog.names import check_name_text
from flightlog.redaction import redact_personal_data, redactor
from flightlog.registry.refs import FORMS
from flightlog.schema.values import is_json_value
from flightlog.sdk import init
from flightlog.sdk.logging import logging_handler
from flightlog.sdk.writer import warn
from flightlog.serving.clock import Clock
from flightlog.serving.fields import check_allow_list
from flightlog.serving.outputfields import check_output_allow_list
from flightlog.serving.privacy import Scrubber
from flightlog.serving.reading import replica_runs
from flightlog.serving.recorder import LABEL, PREDICTION, Recorder
from flightlog.serving.sampling import DEFAULT_MIN_RECORDS, DEFAULT_RECORD_BYTES, AdaptiveSampler
from flightlog.store.base import feature_store

__all__ = ["DEFAULT_SAMPLE", "Replica", "attach", "current", "log_label"]

DEFAULT_SAMPLE = 0.01  # share of requests kept as prediction records
MAX_REQUEST_ID = 128
#: a request id a caller may give (X-Request-ID, request_id=): a UUID, a ULID, a trace id
_REQUEST_ID = re.compile(rf"[A-Za-z0-9._:/+=@-]{{1,{MAX_REQUEST_ID}}}")
_ID_BATCH = 512  # fresh ids drawn from one read of random bytes
SAMPLE_ENV = "FLIGHTLOG_SERVING_SAMPLE"

_current: Replica | None = None
_current_lock = threading.Lock()


def _sample_rate(sample: float | None) -> float:
    where = "attach(sample=...)"
    if sample is None:
        text = os.environ.get(SAMPLE_ENV, "").strip()
        if not text:
            return DEFAULT_SAMPLE
        where = SAMPLE_ENV
        try:
            sample = float(text)
        except ValueError:
            raise InvalidInput(
                f"{SAMPLE_ENV}={text!r} is not a number: use a share between 0 and 1, such as 0.01"
            ) from None
    if isinstance(sample, bool) or not isinstance(sample, (int, float)) or not 0.0 <= float(sample) <= 1.0:
        raise InvalidInput(
            f"{where}: the sampling rate {sample!r} is not a share between 0 and 1 (0.01 keeps one request in 100)"
        )
    return float(sample)


class Replica:
    """What ``attach()`` returns: the run, the recorder, and the request path's two helpers."""

    def __init__(
        self, run: Any, recorder: Recorder, *, endpoint: str, env: str, model: str | None, version: str, sample: float
    ) -> None:
        self.run = run
        self.recorder = recorder
        self.endpoint = endpoint
        self.env = env
        self.model = model
        self.version = version
        self.sample = sample
        self.buffer = recorder.buffer
        self.limit = recorder.limit
        self._sampler = recorder.sampler
        self._answered = recorder.answered
        self._ids: Iterator[str] = iter(())
        self._closed = False

    # ── the request path: as cheap as a list append ────────────────────────
    def new_request_id(self) -> str:
        """A fresh id no caller can guess (80 random bits from the OS, as 20 hex digits): a label
        names the prediction it is for by this id, so a guessable one (a counter) would let a
        caller make labels join the wrong prediction (issue 31, item 10). 80 bits, 20 characters:
        a table that cuts a long cell still tells two ids apart. Drawn from a batch of
        random bytes read at once, so an id costs about what a counter did."""
        try:
            return next(self._ids)
        except StopIteration:
            batch = os.urandom(10 * _ID_BATCH).hex()
            self._ids = iter([batch[i : i + 20] for i in range(0, len(batch), 20)])
            return next(self._ids)

    def request_id(self, given: Any) -> str:
        """The id a request is recorded and answered under: the caller's ``X-Request-ID`` when it
        is one (1 to 128 characters of letters, digits and ``. _ : / + = @ -``) that this replica
        has not answered before; else a fresh one (:meth:`new_request_id`). A given id is never
        taken as it is: an 8 KB id, escape codes, or the id of an earlier request (whose label
        would then join this one) is replaced."""
        if not isinstance(given, str) or given in self._answered or not _REQUEST_ID.fullmatch(given):
            return self.new_request_id()
        self._answered.add(given)
        return given

    def record(
        self,
        end: float,
        latency: float,
        status: int,
        rid: str | None,
        output: Any = None,
        inputs: Any = None,
        parse: Any = None,
        error: BaseException | None = None,
    ) -> None:
        """One request's evidence: ``end`` and ``latency`` from ``time.perf_counter()``; ``inputs``
        only for a sampled request; ``error``: the exception it raised, if any. Appends one
        tuple; a full buffer drops and counts."""
        buffer = self.buffer
        if len(buffer) < self.limit:
            buffer.append((end, latency, status, self.version, rid, output, inputs, parse, error))
        else:
            self.recorder.dropped += 1

    def sampled(self) -> bool:
        """Whether this request becomes a prediction record (the share adapts to traffic)."""
        return random.random() < self._sampler.rate

    # ── after the request ──────────────────────────────────────────────────
    def log_label(self, request_id: str, label: Any) -> None:
        """A label (the truth, learned later) for one request; joined by request id when read.

        Refused (InvalidInput) for an id this endpoint never answered: one this replica did not
        answer and whose prediction no replica of the endpoint recorded."""
        _check_label(request_id, label)
        if not self.recorder.has_answered(request_id) and not self._recorded_elsewhere(request_id):
            raise InvalidInput(
                f"log_label: endpoint {self.endpoint!r} ({self.env}) never answered a request with id "
                f"{request_id[:130]!r}: give the id the response carried in X-Request-ID (a label is taken on "
                "the replica that answered, or for a prediction another replica sampled)",
                details={"request_id": request_id[:130], "endpoint": self.endpoint, "env": self.env},
            )
        self.run.log_event(f"label {request_id}", component=LABEL, fields={"request_id": request_id, "label": label})

    def _recorded_elsewhere(self, request_id: str) -> bool:
        """Whether a replica of this endpoint recorded a sampled prediction with this id."""
        try:
            client = Client.for_lookups(Settings.from_env())
        except Exception:  # noqa: BLE001 - no store to ask now: the label cannot be checked, so it is refused
            return False
        try:
            for run in replica_runs(client, self.endpoint, self.run.project, self.env):
                for event in client.logs(run, component=PREDICTION, grep=re.escape(request_id)):
                    if (event.fields or {}).get("request_id") == request_id:
                        return True
            return False
        finally:
            client.close()

    def flush(self) -> None:
        """Write what is buffered now, the current minute included (tests, a deploy hook)."""
        self.recorder.flush(everything=True)

    def close(self, *, finish: bool = False) -> None:
        """Write everything (and with ``finish``, end the run as succeeded)."""
        global _current
        if self._closed:
            return
        self._closed = True
        self.recorder.close()
        with _current_lock:
            if _current is self:
                _current = None
        if finish:
            self.run.finish()

    def __repr__(self) -> str:
        return f"<flightlog.serving.Replica {self.endpoint}@{self.env} version={self.version} run={self.run.id[:12]}>"


def _check_label(request_id: Any, label: Any) -> None:
    if not isinstance(request_id, str) or not _REQUEST_ID.fullmatch(request_id):
        raise InvalidInput(
            f"log_label: the request id must be the id the response carried (X-Request-ID: 1 to {MAX_REQUEST_ID} "
            f"letters, digits and . _ : / + = @ -), got {str(request_id)[:130]!r}"
        )
    if not is_json_value(label):
        raise InvalidInput(
            f"log_label: the label of request {request_id!r} must be JSON (a number, text, a list or a dict), got {type(label).__name__}"
        )


def attach(
    model: str | None = None,
    endpoint: str | None = None,
    *,
    env: str = "prod",
    version: str | int | None = None,
    project: str | None = None,
    inputs: Any = None,
    sample: float | None = None,
    buffer_limit: int = 100_000,
    interval: float = 1.0,
    heartbeat: float = 10.0,
    capture_logs: bool = True,
    label_field: str | None = None,
    min_records: int = DEFAULT_MIN_RECORDS,
    record_bytes: int = DEFAULT_RECORD_BYTES,
    clock: Clock | None = None,
    outputs: Any = None,
    redact_personal: bool = True,
) -> Replica:
    """Make this process a replica of ``endpoint`` serving ``model`` (once per process).

    - ``model``: a registered model's reference in any form (``NAME@ALIAS``, ``NAME:VERSION``,
      ``models:/NAME/VERSION``, …), resolved by the registry now (the replica runs in the
      model's project); ``version=`` with a bare name means ``NAME/VERSION``; ``version=``
      alone serves a model outside the registry.
    - ``inputs``: the allow-list of input fields kept as they are in sampled prediction records;
      every other field is kept as its hash.
    - ``outputs``: the same for the fields of the model's answer (default: the answer whole).
    - ``redact_personal``: this process's log lines (and everything it records) lose e-mail
      addresses, phone, card and national id numbers too (``[REDACTED:email]``), not only secrets.
    - ``sample``: share of requests kept as prediction records (default ``FLIGHTLOG_SERVING_SAMPLE``,
      else 0.01), raised while a ten-minute window holds fewer than ``min_records`` records of
      this replica, up to ``record_bytes`` of records per window (``sampling.py``; 0 turns it off).
    - ``capture_logs``: the root logger's records become the replica run's log events.
    - ``label_field``: for a model that answers a mapping (``{"fraud": true, "score": 0.93}``), the
      field its labels are compared with (``"fraud"``) in live cohort metrics and the deployment
      diagnosis; a mapping of one field needs none.
    - ``clock``: how request times become wall times (``serving.clock``); a ``FastClock`` runs
      minutes in seconds for tests and replays.

    Raises InvalidInput for a bad allow-list, rate or name, and Forbidden for a token that may
    not write the project, before anything is recorded.
    """
    global _current
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise InvalidInput("attach(endpoint=...): name the endpoint this process serves, such as 'fraud-api'")
    if not isinstance(env, str) or not env.strip():
        raise InvalidInput("attach(env=...): name the environment, such as 'prod' or 'staging'")
    check_name_text(endpoint, "endpoint")  # the rule every name keeps (flightlog.names): no "fraud-api\n"
    check_name_text(env, "environment")
    allow = check_allow_list(inputs)
    allow_out = check_output_allow_list(outputs)
    rate = _sample_rate(sample)
    if label_field is not None and (not isinstance(label_field, str) or not label_field.strip()):
        raise InvalidInput(f"attach(label_field=...): {label_field!r} is not the name of an output field")
    if not isinstance(buffer_limit, int) or buffer_limit < 1:
        raise InvalidInput(f"attach(buffer_limit=...): {buffer_limit!r} is not a positive number of requests")
    for what, value in (("min_records", min_records), ("record_bytes", record_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"attach({what}=...): {value!r} is not a whole number of 0 or more")
    resolved = _resolve(model, None if version is None else str(version), project)
    name = resolved.get("name")
    project = resolved.get("project") or project  # a registered model's project is the registry's, always
    with _current_lock:
        if _current is not None:
            raise InvalidInput(
                f"this process is already a replica of {_current.endpoint}@{_current.env}: attach() once per process"
            )
    from flightlog.data import sketch  # noqa: F401 - numpy, imported now rather than on the first flush

    if redact_personal:  # before the run exists: its every record goes through it
        redact_personal_data()
    host = socket.gethostname()
    tags = {
        KIND_TAG: SERVING_KIND,  # a run of its own kind: out of the runs table by default, diagnosed as serving
        "serving.endpoint": endpoint,
        "serving.env": env,
        "serving.model": name or "",
        "serving.version": resolved["version"],
        "serving.replica": f"{host}:{os.getpid()}",
    }
    run = init(project=project, name=f"serve {endpoint}@{env}", tags=tags, console=False)
    key, keyed_by = _serving_key(run.project)
    run.log_params(
        {
            "serving": {
                "endpoint": endpoint,
                "env": env,
                "model": model,
                "version": resolved["version"],
                "model_run": resolved.get("run_id"),
                "digest": resolved.get("digest"),
                "host": host,
                "pid": os.getpid(),
                "started": time.time(),
                "sample": rate,
                "min_records": min_records,
                "inputs": sorted(allow),
                **({"outputs": sorted(allow_out)} if allow_out is not None else {}),
                "redact_personal": redact_personal,
                "hashes": f"hmac-sha256, the {keyed_by}'s key",
                "heartbeat_s": heartbeat,
                **({"label_field": label_field} if label_field else {}),
            }
        }
    )

    sampler = AdaptiveSampler(rate, min_records=min_records, record_bytes=record_bytes)
    scrub = Scrubber(key, redactor(run.settings.home), allow)
    recorder = Recorder(
        run,
        scrub=scrub,
        limit=buffer_limit,
        interval=interval,
        heartbeat=heartbeat,
        warn=warn,
        label_field=label_field,
        clock=clock,
        sampler=sampler,
        outputs=allow_out,
    )
    replica = Replica(run, recorder, endpoint=endpoint, env=env, model=name, version=resolved["version"], sample=rate)
    with _current_lock:
        _current = replica
    recorder.start()
    atexit.register(replica.close)  # runs before the SDK's own exit hook (registered earlier): evidence first
    _stop_on_sigterm(replica)
    if capture_logs:
        # recorded (redacted) on the replica run, never echoed: the app's own handlers already
        # print its lines, and a raw JSON copy on stdout would keep what redaction took out
        logging.getLogger().addHandler(logging_handler(run, echo=False))
    return replica


def _serving_key(project: str) -> tuple[bytes, str]:
    """The project's serving key (privacy.py) and where it came from: the store keeps one per
    project and gives it to writers only (a server through ``GET /api/v1/serving/key``). When
    neither can be asked now, a key of this process: its hashes are still keyed, but do not
    join other replicas' (said once on stderr and in the run's params)."""
    try:
        client = Client.for_lookups(Settings.from_env())
        try:
            # by the store's database (``store.backend``): a server's HTTP API, else the store's own secret table
            key = feature_store(client.store, _KEYS, project)
            if key is None:
                raise InvalidInput(f"the store {type(client.store).__name__} keeps no keys")
            return key, "project"
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - serving goes on; its hashes are keyed by this process
        warn(f"cannot get project {project!r}'s serving key ({exc}); hashing with a key of this process")
        return secrets.token_bytes(32), "process"


def _server_key(store: Any, project: str) -> bytes:
    doc = store.http.json("GET", "/serving/key", params={"project": project})
    return bytes.fromhex(str(doc["key"]))


def _stored_key(store: Any, project: str) -> bytes:
    return bytes(store.shared_secret(f"serving:{project}"))


#: a project's serving key, by the database of the store that keeps it (``Store.backend``)
_KEYS = {"http": _server_key, "sqlite": _stored_key, "postgresql": _stored_key}


def _stop_on_sigterm(replica: Replica) -> None:
    """A SIGTERM is how a replica is taken down (a rollout, Kubernetes, uvicorn's graceful
    shutdown, which re-raises it once drained): it ends the run ``stopped``, its evidence
    written, where the SDK's own handler would call it ``killed``; then the previous handler
    runs, so the process still ends by the signal. A handler of the server's own (installed
    before ``attach()``) is left alone: it decides what a SIGTERM does."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):
        return
    # the SDK's handler (flightlog.init installs it where there was none) is the one we replace
    sdk_handler = callable(previous) and getattr(previous, "__module__", None) == "flightlog.sdk.api"
    if previous not in (signal.SIG_DFL, None) and not sdk_handler:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        try:
            replica.close()
            replica.run.finish("stopped", end_reason="signal", signal=signum)
        except Exception as exc:  # noqa: BLE001 - a signal handler never raises into the server
            warn(f"could not end the replica's run at SIGTERM: {exc}")
        signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signal.SIGTERM)

    try:
        signal.signal(signal.SIGTERM, on_sigterm)
    except (ValueError, OSError):
        pass


def _resolve(ref: str | None, version: str | None, project: str | None) -> dict[str, Any]:
    """The version to report, through the registry: ``ref`` in any of its forms (``fraud@production``,
    ``fraud:3``, ``models:/fraud/3``; ``version=`` with a bare name is ``NAME/VERSION``), with its
    number, run, digest and the project the registry keeps it in. A reference the registry cannot
    resolve is refused with the forms that work, before anything is recorded (a replica never runs
    detached from its model). ``version=`` alone (no ``model=``) is a model outside the registry.
    A store that cannot answer now (a server that is down) leaves the reference as the version,
    with a warning, and serving goes on."""
    if ref is None:
        return {"version": version or "unknown"}
    if not isinstance(ref, str) or not ref.strip():
        raise InvalidInput(f"attach(model=...): give the registered model as one of {FORMS}")
    # cost: the registry (sqlite3, its store) only for attach(model=...)
    from flightlog.registry import parse_ref, resolve

    parsed = parse_ref(ref)
    if version is not None:
        if parsed.alias is not None or parsed.version is not None:
            raise InvalidInput(
                f"attach(model={ref!r}, version={version!r}): the reference names a version already; give one of them"
            )
        ref = f"{parsed.name}/{version}"
    try:
        client = Client.for_lookups(Settings.from_env())
        try:
            found = resolve(ref, client, project=project)
        finally:
            client.close()
    except StoreUnavailable as exc:
        warn(f"cannot resolve {ref!r} now ({exc}); recording the replica with version {ref!r} until it restarts")
        return {"version": ref, "name": parsed.name}
    except (NotFound, InvalidInput) as exc:
        outside = " (a model outside the registry: give version= alone, without model=)"
        raise type(exc)(
            f"attach(model={ref!r}): {exc.message}; attach takes {FORMS}{outside}", details=exc.details
        ) from None
    return {
        "version": str(found.version),
        "name": found.name,
        "run_id": found.run_id,
        "digest": found.digest,
        "project": found.project,
    }


def current() -> Replica | None:
    """This process's replica (``attach()``ed and not closed), or None."""
    return _current


def log_label(request_id: str, label: Any) -> None:
    """``serving.log_label(request_id, label)`` on this process's replica."""
    replica = _current
    if replica is None:
        raise InvalidInput("log_label() needs a replica: call flightlog.serving.attach(...) first in this process")
    replica.log_label(request_id, label)
