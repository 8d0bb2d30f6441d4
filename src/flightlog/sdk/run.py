"""``Run``: what training code holds. Every method is cheap and never raises for internal
trouble (a full disk, a store that is down); it raises only for clear misuse at the call site,
such as a metric value that is not a number."""

from __future__ import annotations

import getpass
import glob
import os
import stat
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import FlightlogError, InvalidInput
from flightlog.failure import failure_from_exception
from flightlog.logevents import level_code
from flightlog.models import STATUSES
from flightlog.names import check_run_name as check_name
from flightlog.plugins import features
from flightlog.schema.values import MAX_PARAM_DEPTH, is_json_value, metric_name_problem
from flightlog.sdk.hangs import join_stopped, unwatch_run
from flightlog.sdk.ranks import settle_dead_peers
from flightlog.sdk.runhooks import run_ended
from flightlog.sdk.stages import StageTimer
from flightlog.statuses import EXITED_STATUSES, SIGNALLED_STATUSES
from flightlog.store.artifacts import LocalArtifactStore, open_artifact_store
from flightlog.store.edits import DESCRIPTION_TAG

if TYPE_CHECKING:
    from flightlog.config import Settings
    from flightlog.sdk.writer import Writer

__all__ = ["Run", "FlightlogWarning", "flatten", "check_name", "DESCRIPTION_TAG"]

_time = time.time


class FlightlogWarning(UserWarning):
    """Something was recorded differently from how it was given (e.g. a param stored as repr)."""


def flatten(data: Mapping[str, Any], prefix: str = "", _depth: int = 1) -> dict[str, Any]:
    """``{"optim": {"lr": 0.1}}`` → ``{"optim.lr": 0.1}``.

    Raises ValueError, naming the key path, for mappings nested deeper than MAX_PARAM_DEPTH
    (a config nested thousands deep would otherwise raise RecursionError out of ``init``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            if _depth >= MAX_PARAM_DEPTH:
                raise ValueError(
                    f"param {name[:200]!r} is nested more than {MAX_PARAM_DEPTH} levels deep; "
                    "flatten it, or log it as an artifact or evidence"
                )
            out.update(flatten(value, name + ".", _depth + 1))
        else:
            out[name] = value
    return out


def _check_metric_names(data: Mapping[str, Any], known: set[str]) -> None:
    """Raise for the first bad name in ``data``; remember the good ones (up to a bound, so a
    run inventing a name per step does not grow this set without end)."""
    for key in data:
        if key in known:
            continue
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r} ({type(key).__name__})")
        problem = metric_name_problem(key)
        if problem is not None:
            raise ValueError(f"metric name {key[:80]!r}{'…' if len(key) > 80 else ''} {problem}")
        if len(known) < 100_000:
            known.add(key)


def _as_mapping(params: Any) -> Mapping[str, Any]:
    if isinstance(params, Mapping):
        return params
    if hasattr(params, "__dict__"):  # argparse.Namespace, simple config objects
        return vars(params)
    raise TypeError(f"params must be a mapping (dict, argparse.Namespace), got {type(params).__name__}")


# Steps are stored as int64; the top value is kept free so the automatic next step fits too.
_STEP_MIN = -(2**63)
_STEP_MAX = 2**63 - 2


def _coerce_metrics(data: Mapping[str, Any]) -> dict[str, float]:
    """The slow path of ``log``: names checked, every value made a float the store can hold."""
    out: dict[str, float] = {}
    for key, value in data.items():
        if not isinstance(key, str):
            raise TypeError(f"metric names must be strings, got {key!r} ({type(key).__name__})")
        if type(value) is float:
            out[key] = value
        else:
            out[key] = _metric_value(key, value)
    return out


def _metric_value(key: str, value: Any) -> float:
    kind = type(value).__name__
    if value is None or isinstance(value, (str, bytes, bytearray)):
        raise TypeError(f"metric {key!r} must be a number, got {kind}: {value!r:.60}")
    if getattr(value, "ndim", 0):  # a numpy array or a tensor: its one element, if it has one
        try:
            value = value.item()
        except Exception:
            shape = tuple(getattr(value, "shape", ()))
            raise TypeError(
                f"metric {key!r} must be a number or a one-element array/tensor, got {kind} of shape {shape}"
            ) from None
    try:
        return float(value)  # int, bool, numpy scalars and 0-d arrays, 0-d tensors, Decimal, Fraction
    except OverflowError:
        raise ValueError(
            f"metric {key!r} is too large for a 64-bit float: {value!r:.60}; log it scaled or as a log value"
        ) from None
    except Exception:
        raise TypeError(
            f"metric {key!r} must be a number or a one-element array/tensor, got {kind}: {value!r:.60}"
        ) from None


class Run:
    """A run being recorded by this process. Attributes: ``id``, ``name``, ``project``, ``owner``."""

    def __init__(
        self,
        writer: Writer,
        settings: Settings,
        *,
        run_id: str,
        project: str,
        name: str | None,
        owner: bool,
        attempt: int,
        on_finish: Any = None,
        peer: bool = False,
    ) -> None:
        self.id = run_id
        self.project = project
        self.name = name
        self.owner = owner
        #: one of the ranks of a job that own the run together (sdk/ranks.py): none sets its
        #: status, each records its own end, the store ends the run when they all have
        self.peer = peer
        self.attempt = attempt
        self.settings = settings
        self._w = writer
        self._metrics = writer.metrics
        self._limit = settings.buffer_limit
        self._drop = settings.log_policy == "drop"
        self._step = 0
        self._tls = threading.local()
        self._offset = time.time() - time.perf_counter()
        self._finished = False
        # finish() is recording the end now: a SIGTERM that comes meanwhile waits until it is done
        # (sdk/api.py), since killing the process halfway would leave the end, and a peer rank's
        # loss it was settling, unrecorded
        self._ending = False
        self._finish_lock = threading.Lock()
        self._on_finish = on_finish
        self._sampler: Any = None
        self._names: set[str] = set()  # metric names already checked
        self._console = False  # its process's console output is recorded on it (sdk/console.py)
        self._beats = 0  # heartbeats given: a sign of progress to the hang watch (sdk/hangs.py)

    def __repr__(self) -> str:
        return f"<flightlog.Run {self.id[:12]} project={self.project!r} name={self.name!r}>"

    def _repr_html_(self) -> str:
        """In a notebook: a small summary (status, params, last metric values)."""
        from flightlog.sdk.notebook import run_html

        return run_html(self)

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            self.fail(exc)
        else:
            self.finish()

    # ── metrics: the hot path ────────────────────────────────────────────────
    def log(self, data: Mapping[str, Any], step: int | None = None) -> None:
        """Record metric values at a step (default: one past the last step). Costs ~1 µs.

        Raises TypeError (ValueError for a number out of range) at the call site, naming the
        key, for a value that is not a number; ValueError for a name that is empty, longer than
        250 characters or holds a control character (``records.metric_name_problem``); a numpy array or tensor of one element counts as
        its element. NaN and ±inf are stored (and flagged on read). Steps are 64-bit integers.
        """
        if step is None:
            step = self._step
        elif type(step) is not int or not _STEP_MIN <= step <= _STEP_MAX:
            step = _check_step(step)
        if not self._names.issuperset(data):  # a name not seen before: checked once
            _check_metric_names(data, self._names)
        for value in data.values():
            if type(value) is not float:  # ints too: one that overflows a float must fail here
                values = _coerce_metrics(data)
                break
        else:
            values = dict(data)
        if step >= self._step:
            self._step = step + 1
        metrics = self._metrics
        if len(metrics) >= self._limit and self._full():
            return
        metrics.append((step, _time(), values))

    def _full(self) -> bool:
        """The buffer is full: drop (counted) or wait for the shipper. True when dropped."""
        from flightlog.sdk.shipper import shipper

        if self._drop:
            self._w.stats["dropped"] += 1
            self._w.count("dropped_metric_calls")
            return True
        deadline = time.monotonic() + 30
        while len(self._metrics) >= self._limit and time.monotonic() < deadline:
            shipper.poke()
            time.sleep(0.005)
        return False

    # ── params, tags, notes ──────────────────────────────────────────────────
    def log_params(self, params: Any = None, **kwargs: Any) -> None:
        """Record parameters; nested dicts are flattened with dots (``optim.lr``).

        Secrets are hidden before they are recorded (``docs/redaction.md``): values of
        secret-named params (``api_key``, everything under ``credentials``), and secrets found
        in any value (a URL's password, a token, the value of a secret environment variable)."""
        data = flatten({**_as_mapping(params or {}), **kwargs})
        clean: dict[str, Any] = {}
        for key, value in data.items():
            if isinstance(value, tuple):
                value = list(value)
            if not is_json_value(value):
                if _too_deep(value):
                    raise ValueError(
                        f"param {key[:200]!r} holds lists nested more than {MAX_PARAM_DEPTH} levels deep; "
                        "flatten it, or log it as an artifact or evidence"
                    )
                warnings.warn(
                    f"param {key!r}: {type(value).__name__} cannot be stored as JSON; stored as its repr",
                    FlightlogWarning,
                    stacklevel=2,
                )
                value = repr(value)
            clean[key] = value
        if clean:
            self._w.add_record("params", data=clean)

    def set_tags(self, tags: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        data = {str(k): str(v) for k, v in {**(tags or {}), **kwargs}.items()}
        if data:
            self._w.add_record("tags", data=data)

    def remove_tags(self, *keys: str) -> None:
        """Remove tags by key (a key the run does not have is ignored)."""
        if keys:
            self._w.add_record("tags", data=dict.fromkeys(map(str, keys)))

    def rename(self, name: str) -> None:
        """Give the run a new name (shown in listings, the UI, notifications)."""
        self.name = check_name(name)
        self._w.add_record("run", name=self.name)

    def set_description(self, text: str) -> None:
        """What this run is for, in a sentence or a paragraph; kept as the ``description`` tag
        (so ``tags.description ~ 'baseline'`` finds it). Empty text removes it."""
        if not isinstance(text, str):
            raise TypeError(f"a description is text, got {type(text).__name__}")
        if text.strip():
            self._w.add_record("tags", data={DESCRIPTION_TAG: text.strip()})
        else:
            self.remove_tags(DESCRIPTION_TAG)

    def note(self, text: str, author: str | None = None) -> None:
        """Keep a hypothesis or a piece of evidence with the run."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("a note needs some text")
        self._w.add_record("note", text=text, author=author or _user())

    # ── stages and logs ──────────────────────────────────────────────────────
    def stage(self, name: str, **attrs: Any) -> StageTimer:
        """``with run.stage("data_loading"):`` — cheap enough to wrap every batch."""
        return StageTimer(self._w.stages, self._stack(), name, attrs or None, self._offset)

    def record_stage(self, name: str, start: float, end: float, **attrs: Any) -> None:
        """Record one finished span given its wall-clock start and end (``time.time()``).

        For framework callbacks that see a span's start and end in different hooks (a batch
        begins in one callback and ends in another), where a ``with`` block cannot wrap it.
        """
        if end < start:
            raise InvalidInput(f"stage {name!r}: end {end} is before start {start}")
        self._w.stages.record(name, start, end, attrs or None)

    def _stack(self) -> list[str]:
        try:
            return self._tls.stack
        except AttributeError:
            stack: list[str] = []
            self._tls.stack = stack
            return stack

    @property
    def current_stage(self) -> str | None:
        stack = self._stack()
        return stack[-1] if stack else None

    def log_event(
        self,
        message: str,
        *,
        level: str | int = "info",
        component: str | None = None,
        fields: Mapping[str, Any] | None = None,
        time: float | None = None,
    ) -> None:
        """Record one structured log event on the run (the logging handler calls this)."""
        from flightlog.redaction import count_pass, redactor

        red = redactor(self.settings.home)
        count_pass("logs")  # the event's one pass: formed here, never redacted again on its way
        self._w.add_log(
            time=time if time is not None else _time(),
            stream="sdk",
            level=level_code(level),
            message=red.redact(message),
            component=component,
            fields=red.redact_mapping(dict(fields)) if fields else None,
            rank=self._w.rank,
            attempt=self.attempt,
            stage=self.current_stage,
        )

    def heartbeat(self, at: float | None = None) -> None:
        """A sign of life on the run's timeline (``heartbeat``), for a process that may be idle
        for long (a serving replica without traffic): the ``stalled`` alert and
        ``flightlog.serving.replicas`` read it, and the hang watch counts it as progress (call it
        in a long phase without steps, such as an evaluation, so it does not read as a hang)."""
        self._beats += 1
        self._w.add_record("timeline", data={"heartbeat": at if at is not None else _time()})

    # ── artifacts, inputs, checkpoints, evidence ─────────────────────────────
    def _artifact_store(self) -> LocalArtifactStore:
        store: LocalArtifactStore | None = getattr(self, "_artifacts", None)
        if store is None:
            if self.settings.url:  # the journal's artifact records carry local blobs to the server
                store = LocalArtifactStore(self.settings.home / "artifacts")
            else:
                store = open_artifact_store(self.settings.home, self.settings.artifacts)
            self._artifacts = store
        return store

    def log_artifact(
        self,
        path: str | os.PathLike[str],
        role: str = "output",
        kind: str | None = None,
        name: str | None = None,
        *,
        follow_symlinks: bool = False,
    ) -> dict[str, Any]:
        """Copy a file (or a directory's files) into the artifact store; size and sha256 recorded.

        ``name`` (default: the file's or directory's own name) is the artifact's path under the
        run: relative, without ``..``, ``.`` or empty parts, control characters or backslashes;
        another raises ValueError here (the store would refuse it later, silently). ``path``
        must be a regular file or a directory: a device, a FIFO or a socket raises ValueError.

        In a directory, a symbolic link that points outside it (``creds -> ~/.aws/credentials``)
        is not followed unless ``follow_symlinks=True``: it is skipped, and what was skipped is
        said on stderr and recorded on the run (the ``skipped_symlinks`` of the directory's
        record). Links that stay inside the directory are copied as the files they point to.
        """
        if role not in ("input", "output"):
            raise InvalidInput(f"artifact role {role!r} is not valid: use 'input' or 'output'")
        try:
            source = Path(path).resolve()
        except (RuntimeError, OSError) as exc:  # pathlib's "Symlink loop" (RuntimeError; OSError ELOOP on 3.13)
            raise ValueError(
                f"log_artifact: {path} is a loop of symbolic links (following it comes back to it: {exc}); "
                "point it at a real file or directory"
            ) from None
        if not source.exists():
            raise FileNotFoundError(f"log_artifact: {path} does not exist")
        if not (source.is_file() or source.is_dir()):
            raise ValueError(
                f"log_artifact: {path} is not a regular file or a directory ({_file_type(source)}); "
                "copy what it produces into a file first"
            )
        base = _artifact_name(name if name is not None else source.name)
        if source.is_file():
            return self._put(source, base, role, kind or "file")
        files, skipped = _directory_files(source, follow_symlinks)
        results = [self._put(p, f"{base}/{rel}", role, kind or "dir-file") for p, rel in files]
        manifest = self._manifest(source, exclude=[glob.escape(rel) for rel in skipped])
        summary = _manifest_summary(manifest)
        if skipped:
            summary["skipped_symlinks"] = skipped
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            self._w._warn_once(
                f"symlinks:{source}",
                f"log_artifact({path}): skipped {len(skipped)} symbolic link(s) pointing outside the directory "
                f"({shown}); pass follow_symlinks=True to copy what they point to",
            )
            self.log_event(
                f"log_artifact skipped {len(skipped)} symbolic link(s) pointing outside {base}: {shown}",
                level="warning",
                component="flightlog",
                fields={"artifact": base, "skipped_symlinks": skipped},
            )
        self._w.add_record(
            "artifact",
            role=role,
            kind=kind or "dir",
            path=base,
            source=str(source),
            size=summary.get("total_size"),
            sha256=_digest_hex(manifest),
            uri=None,
            attempt=self.attempt,
            meta=summary,
        )
        return {"path": base, "kind": kind or "dir", "files": results, **summary}

    def _put(self, source: Path, rel: str, role: str, kind: str, **extra: Any) -> dict[str, Any]:
        try:
            sha, size, uri = self._artifact_store().put_file(source)
        except (OSError, FlightlogError) as exc:  # a full disk, an unreachable bucket: never the workload's problem
            reason = exc.message if isinstance(exc, FlightlogError) else str(exc)
            self._w._warn_once(
                "artifact", f"cannot copy {source} into the artifact store ({reason}); recorded without content"
            )
            sha, size, uri = None, source.stat().st_size, None
        record = {
            "role": role,
            "kind": kind,
            "path": rel,
            "source": str(source),
            "size": size,
            "sha256": sha,
            "uri": uri,
            **extra,
        }
        self._w.add_record("artifact", attempt=self.attempt, **record)
        return record

    def _manifest(self, path: Path, exclude: list[str] | None = None) -> dict[str, Any]:
        manifest: dict[str, Any] = features().need(
            "flightlog_data_manifest",
            needed_by="run.log_input",
            install="flightlog with its data feature",
            path=path,
            cache_dir=self.settings.home / "cache",
            exclude=exclude or (),
        )
        return manifest

    def log_input(self, path: str | os.PathLike[str], name: str | None = None) -> dict[str, Any]:
        """Record a dataset snapshot (file count, total size, hashes) as an input of the run."""
        source = Path(path).resolve()
        if not source.exists():
            raise FileNotFoundError(f"log_input: {path} does not exist")
        manifest = self._manifest(source)
        summary = _manifest_summary(manifest)
        digest = _digest_hex(manifest)
        if source.is_file() and manifest.get("files"):
            digest = manifest["files"][0].get("sha256") or digest  # a file's identity is its content hash
        self._w.add_record(
            "artifact",
            role="input",
            kind="dataset",
            path=name or source.name,
            source=str(source),
            size=summary.get("total_size"),
            sha256=digest,
            uri=None,
            attempt=self.attempt,
            meta=summary,
        )
        self._w.add_record("evidence", kind="manifest", name=name or source.name, data=manifest)
        return summary

    def checkpoint(self, path: str | os.PathLike[str], step: int, *, copy: bool = False) -> dict[str, Any]:
        """Record a checkpoint's path and step (``flightlog run --resume`` hands it back).

        The file stays where it is unless ``copy=True``.
        """
        source = Path(path).resolve()
        if not source.exists():
            raise FileNotFoundError(f"checkpoint: {path} does not exist")
        step = _check_step(step)
        if copy and source.is_file():
            rec = self._put(source, source.name, "output", "checkpoint", step=step)
        else:
            size = (
                source.stat().st_size
                if source.is_file()
                else sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
            )
            rec = {
                "role": "output",
                "kind": "checkpoint",
                "path": source.name,
                "source": str(source),
                "size": size,
                "sha256": None,
                "uri": f"file://{source}",
                "step": step,
            }
            self._w.add_record("artifact", attempt=self.attempt, **rec)
        self._w.add_record("timeline", data={"last_checkpoint": _time()})
        return {**rec, "step": step}

    def register_model(
        self,
        path: str,
        name: str,
        *,
        alias: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> Any:
        """Register the artifact (or checkpoint) this run logged under ``path`` as the next
        version of the model ``name`` (optionally pointing ``alias`` at it); returns the
        `flightlog.registry.ModelVersion`. What the run logged so far is shipped first.

        Raises `flightlog.errors.NotFound` for a path the run never logged (the message lists
        what it did log) and `flightlog.errors.InvalidInput` for a bad name, alias or tag: a
        call-site mistake, like a bad metric name. The registry is a feature: it is found
        through the feature table (docs/plugins.md)."""
        action = features().run_action("register_model")
        if action is None:
            raise InvalidInput(
                "register_model needs the model registry feature (flightlog.registry), "
                "which this installation does not have"
            )
        self._w.flush()
        return action.function(self, path, name, alias=alias, description=description, tags=tags)

    @property
    def resume_from(self) -> str | None:
        """The checkpoint path ``flightlog run --resume`` handed to this process, if any."""
        return self.settings.resume_from

    def log_evidence(self, kind: str, name: str, data: Mapping[str, Any]) -> None:
        if not is_json_value(dict(data)):
            raise TypeError(f"evidence {kind}/{name} must be JSON-serializable (dicts, lists, str, numbers)")
        self._w.add_record("evidence", kind=kind, name=name, data=dict(data))

    def log_profile(self, name: str, profile: Any) -> None:
        """Keep a data profile with the run: a ``flightlog.data.profile(...)`` result (or its
        ``to_dict()``), or the table itself — a data frame, a pyarrow table, a dict of columns,
        a file — profiled here. Live drift and ``data drift`` compare against what is kept, so
        raw columns are never kept under the name of a profile."""
        if hasattr(profile, "to_dict") and hasattr(profile, "columns") and hasattr(profile, "row_count"):
            data = profile.to_dict()
        elif isinstance(profile, Mapping) and "row_count" in profile and "columns" in profile:
            data = dict(profile)
        else:
            data = dict(
                features().need(
                    "flightlog_data_profile",
                    needed_by="run.log_profile",
                    install="flightlog[data] (its data feature)",
                    data=profile,
                )
            )
        self.log_evidence("profile", name, data)

    def log_eval(
        self,
        y_true: Any,
        y_pred: Any,
        *,
        cohorts: Mapping[str, Any] | None = None,
        metrics: list[str] | None = None,
        name: str = "eval",
        sample_size: int = 1000,
    ) -> dict[str, Any]:
        """Per-cohort evaluation metrics and a bounded sample of predictions."""
        result: dict[str, Any] = features().need(
            "flightlog_cohort_evaluate",
            needed_by="run.log_eval",
            install="flightlog[data] (its data feature)",
            y_true=y_true,
            y_pred=y_pred,
            cohorts=cohorts,
            metrics=metrics,
            sample_size=sample_size,
        )
        self.log_evidence("eval", name, result)
        overall = result.get("overall") or {}
        numeric = {
            f"{name}.{k}": v for k, v in overall.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        if numeric:
            self.log(numeric, step=max(self._step - 1, 0))
        return result

    # ── the end ──────────────────────────────────────────────────────────────
    @property
    def stats(self) -> dict[str, int]:
        """Records written, points logged, drops and errors of this process's writer."""
        return {**self._w.stats, "buffered_points": len(self._metrics)}

    def fail(self, exc: BaseException) -> None:
        """Finish as failed (or stopped, for Ctrl-C) with the exception's traceback.

        The traceback is also recorded as one ``stderr`` log event at level error, and the
        failure summary keeps the last lines the process printed (when its console is
        captured), as ``flightlog run`` does for a workload: ``flightlog diagnose`` reads the
        same evidence either way. Under ``flightlog run`` the runner records the printed
        traceback itself, so this process adds no event of its own."""
        if isinstance(exc, KeyboardInterrupt):
            self.finish("stopped", end_reason="signal", signal=2)
            return
        failure = failure_from_exception(exc)
        if not self._finished and not self.settings.captured:
            failure.update(self._last_output())
            self._log_traceback(failure["traceback"])
        self.finish("failed", end_reason="exception", exit_code=1, failure=failure)

    def _last_output(self) -> dict[str, Any]:
        """What the console capture saw last (drained first, so it is stored before the end)."""
        from flightlog.sdk import console

        capture = console.current(self)
        if capture is None:
            return {}
        try:
            capture.drain(flush=True)
        except Exception as exc:  # evidence, never a reason to fail
            self._w._warn_once("console", f"console output not recorded: {type(exc).__name__}: {exc}")
        return {"last_lines": capture.last_lines(self)}

    def _log_traceback(self, text: str, component: str | None = None, fields: Mapping[str, Any] | None = None) -> None:
        """A traceback as one stderr event at level error (redacted), as the runner stores it."""
        from flightlog.redaction import count_pass, redactor

        red = redactor(self.settings.home)
        count_pass("logs")
        self._w.add_log(
            time=_time(),
            stream="stderr",
            level=40,
            message=red.redact(text.rstrip()),
            component=component,
            fields=red.redact_mapping(dict(fields)) if fields else None,
            rank=self._w.rank,
            attempt=self.attempt,
            stage=self.current_stage,
        )

    def finish(
        self,
        status: str | None = None,
        *,
        end_reason: str | None = None,
        exit_code: int | None = None,
        signal: int | None = None,
        failure: dict[str, Any] | None = None,
    ) -> None:
        """Flush what this process wrote; the run's owner also sets its final status."""
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"status {status!r} is not valid: use one of {', '.join(STATUSES)}")
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
            self._ending = True
        try:
            if self._sampler is not None:
                self._sampler.stop()
            unwatch_run(self)  # its last look (a stall its last steps ended) is recorded before the end
            if self._console:
                from flightlog.sdk import console

                try:
                    console.detach(self)  # what it printed is stored before its end
                except Exception as exc:
                    self._w._warn_once("console", f"console output not recorded: {type(exc).__name__}: {exc}")
            final = status or "succeeded"
            update: dict[str, Any] = {
                "status": final,
                "ended": _time(),
                "end_reason": end_reason
                or ("exit" if final in EXITED_STATUSES else "signal" if final in SIGNALLED_STATUSES else None),
            }
            if exit_code is not None or final == "succeeded":
                update["exit_code"] = exit_code if exit_code is not None else 0
            if signal is not None:
                update["signal"] = signal
            if failure is not None:
                update["failure"] = failure
            if self.owner:
                self._w.add_record("run", **update)
                if self._w.on_records is not None:
                    self._w.persist()  # the records a feature asked for reach it before the run's end
                run_ended(self, final)  # the features' run-end hooks (sdk/runhooks.py): never raise
            elif self.peer and getattr(self._w, "rank_fields", {}).get("rank") == 0:
                run_ended(self, final)  # of peer ranks, rank 0 speaks for the run (its own end)
            rank_fields = getattr(self._w, "rank_fields", {})
            if rank_fields.get("rank") is not None and self.settings.mode == "online":
                # peers on this host that vanished (SIGKILL, os._exit) are lost: said before this
                # rank's own end, so that the last rank to end also ends a run of peers
                settle_dead_peers(self.settings, self.id, getattr(self._w, "writer_id", None))
            end = {k: v for k, v in update.items() if k != "ended"}
            self._w.close(remove_journal_if_shipped=True, end=end)
        finally:
            join_stopped()  # the hang watch, told to stop above, has ended while the records were stored
            self._ending = False
            if self._on_finish is not None:
                self._on_finish(self)


def _too_deep(value: Any) -> bool:
    """Lists or dicts nested deeper than MAX_PARAM_DEPTH, found without recursion."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list | tuple | Mapping):
            if depth >= MAX_PARAM_DEPTH:
                return True
            items = item.values() if isinstance(item, Mapping) else item
            stack.extend((v, depth + 1) for v in items)
    return False


def _check_step(step: Any) -> int:
    if isinstance(step, bool) or not hasattr(step, "__index__"):
        raise TypeError(f"step must be an integer, got {type(step).__name__}: {step!r:.40}")
    value = int(step.__index__())
    if not _STEP_MIN <= value <= _STEP_MAX:
        raise ValueError(f"step {value} is out of range: steps are 64-bit integers, from {_STEP_MIN} to {_STEP_MAX}")
    return value


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _manifest_summary(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in manifest.items() if k != "files"}


def _digest_hex(manifest: Mapping[str, Any]) -> str | None:
    digest = manifest.get("digest")
    if isinstance(digest, str) and digest.startswith("sha256:"):
        return digest[len("sha256:") :]
    return digest if isinstance(digest, str) else None


def _artifact_name(name: Any) -> str:
    """An artifact's name as the store will accept it, or ValueError at the call."""
    from flightlog.store.artifacts import check_artifact_path

    if not isinstance(name, str):
        raise TypeError(f"log_artifact: name must be a string, got {type(name).__name__}")
    try:
        return check_artifact_path(name)
    except InvalidInput as exc:
        raise ValueError(f"log_artifact: {exc.message}") from None


def _file_type(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return str(exc)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _directory_files(root: Path, follow_symlinks: bool) -> tuple[list[tuple[Path, str]], list[str]]:
    """The regular files under ``root`` as (path, posix path relative to root), sorted, and the
    relative paths of the symbolic links skipped because they point outside ``root``.

    A link inside the tree is read through (it names a file the directory holds); one that
    leaves it is skipped unless ``follow_symlinks``. Linked directories are entered only when
    following, each real directory once (a link back up the tree cannot loop)."""
    files: list[tuple[Path, str]] = []
    skipped: list[str] = []
    seen: set[Path] = {root}
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            path = Path(entry.path)
            if entry.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue  # a dangling link or a loop: nothing to copy
                if not follow_symlinks and not target.is_relative_to(root):
                    skipped.append(rel)
                    continue
                if target.is_dir():
                    if follow_symlinks and target not in seen:
                        seen.add(target)
                        stack.append((path, rel + "/"))
                    continue
            if entry.is_dir(follow_symlinks=False):
                real = path.resolve()
                if real not in seen:
                    seen.add(real)
                    stack.append((path, rel + "/"))
            elif entry.is_file():
                files.append((path, rel))
    files.sort(key=lambda item: item[1])
    skipped.sort()
    return files, skipped
