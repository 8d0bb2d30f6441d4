"""Metrics read from captured lines: ``step=120 loss=0.43 lr=1e-4`` becomes three points.

A script that only prints its progress still gets NaN detection, plateau alerts and charts
under ``flightlog run``. Only lines that look like training progress count, so ordinary text
with a number in it (``retrying in 5 s``, ``port: 8080``) makes no metric:

* a step key (below) and at least one other numeric ``key=value`` / ``key: value`` pair,
* two or more numeric pairs on a plain line, or
* one pair whose key names a training quantity (``loss``, ``val_loss``, ``acc``, ``lr``, …),
  at the end of the line (``step 5 loss=0.3``; not ``loss=NaN guard enabled, skipping …``);
  on a line that prints a loss with a space before its number (``step 57 loss 915.63``), the
  step keys and training quantities separated so (``_SPACED``) count as pairs too.

JSON and logfmt lines give their numeric fields, and count only with a step key or a training
quantity among them. A ``step``/``global_step``/``iter``/``iteration``/``train_step`` key (else
``epoch``) gives the step and is not a metric itself; without one, each progress line is the
next step. Never from: multi-line events (tracebacks and other
blocks), values that were redacted, keys that name a secret, keys that name an identity, an
address or an end rather than a quantity (``NEVER_METRICS``: a launcher's failure summary's
``exitcode``/``local_rank``/``pid``, ports, ranks, timestamps). A number may be quoted
(``{'loss': '0.69'}``, as Hugging Face's Trainer 5 prints it). Names keep what the line says
(a JSON key's other characters become ``_``: ``"loss (train)"`` → ``loss_train_``), cut to 64
characters; at most ``max_names`` distinct names per run (the rest are counted in
``stats["line_metric_names_dropped"]``, never stored).

Cost: lines without ``=``, ``: `` or ``oss `` are skipped by ``in`` tests, the others are matched
with one regex, and what a shape of line gives (which key is the step, which names to keep)
is worked out once per shape. A flood is sampled: past ``max_rate`` candidate lines in a
second (1,000), every k-th is read, k growing with the flood, and every line with a ``nan``
or ``inf`` value (``line_metrics_sampled_out`` counts the others). Reading every line costs
about 4 µs each, eight times the rest of the pipeline; no training script prints progress
that fast, but a chatty one must not pay for it.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Collection
from typing import Any

from flightlog.logevents import LogBatch
from flightlog.redaction.names import is_secret_name

__all__ = ["LineMetrics", "MAX_NAMES", "MAX_RATE", "NEVER_METRICS"]

MAX_NAMES = 200
MAX_RATE = 1000  # candidate lines read in full per second before sampling starts
MAX_HELD = 100_000  # points waiting to be taken (the runner takes them at least once a second)
_NAME_CHARS = 64
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|NAN|inf|Inf|INF|infinity|Infinity)"
# key, separator, number; the number must end the token (``v1.2.3``, ``10:30``, ``3/10`` are not).
# A quote may close the key: Python dicts (``{'loss': 0.5, 'epoch': 1}``, Hugging Face's Trainer).
# The number may be quoted as a string: Hugging Face's Trainer (5.x) prints ``{'loss': '0.6924'}``.
_PAIR = re.compile(
    rf"(?<![\w./\-])([A-Za-z][\w./\-]{{0,127}})['\"]?[ \t]*(?:=|:[ \t])[ \t]*['\"]?({_NUMBER})(?![\w.:/\-])"
)
_STEP_KEYS = ("step", "global_step", "iter", "iteration", "train_step")
_EPOCH_KEYS = ("epoch",)
# A lone pair counts when its key names one of these (the last word, any prefix: ``val_loss``).
_TRAINING_WORDS = re.compile(
    r"(?:^|[_./\-])(?:loss|acc|accuracy|lr|learning_rate|ppl|perplexity|grad_norm|reward|f1|auc|"
    r"mse|mae|rmse|bleu|wer|cer|nll|top1|top5)$",
    re.I,
)
#: keys whose numbers are identities, addresses or ends, never a quantity that changes with
#: training: a launcher's failure summary (``exitcode : 1 (pid: 1234)``, ``rank : 0 (local_rank:
#: 0)``), a process's ids, ports, exit codes and timestamps (compared lower-case, ``-`` as ``_``)
NEVER_METRICS = frozenset(
    {
        "pid", "ppid", "tid", "uid", "gid", "thread", "thread_id", "process", "process_id",
        "rank", "local_rank", "global_rank", "node_rank", "group_rank", "role_rank", "world_size",
        "local_world_size", "member", "exitcode", "exit_code", "exitstatus", "exit_status",
        "returncode", "return_code", "signal", "signum", "port", "master_port", "errno",
        "error_code", "timestamp", "ts", "time_ns", "line", "lineno", "version", "attempt",
        "restart_count", "restarts", "job_id", "jobid", "task_id", "device", "device_id", "gpu",
        "gpu_id", "cuda_device", "seed",
    }
)  # fmt: skip
_NONFINITE = re.compile(r"[=:][ \t]*[-+]?(?:nan|inf)", re.I)
#: a progress line with no separator between a key and its number — ``step 57 loss 915.63``,
#: ``Epoch 3 loss 0.52 acc 0.81``, nanoGPT's ``iter 100: loss 2.3456, time 120.5ms`` — read only
#: where a loss is printed so (one ``in`` test of ``_SPACED_GATE``: every line pays it), and only
#: for the step keys and the training quantities: prose with a number after a word (``retrying 3
#: times``) is never read.
#: A split's word before the quantity is part of its name (``val loss 0.31`` → ``val_loss``), so a
#: line of the best validation loss never lands in the training loss's series.
_SPACED_GATE = "oss "  # "loss 0.3", "Loss 0.3", "val_loss 0.3"
_SPACED = re.compile(
    r"(?<![\w./\-])((?:(?:train|training|val|valid|validation|eval|test|dev)[ _])?"
    r"(?:step|global_step|iter|iteration|train_step|epoch|(?:[a-z0-9]+_)*loss|acc|accuracy|lr|learning_rate|ppl|perplexity"
    r"|grad_norm|gnorm|reward|f1|auc|mse|mae|rmse|bleu|wer|cer|nll|top1|top5))"
    rf"[ \t]+({_NUMBER})(?![\w./\-]|:\S)",
    re.I,
)
#: a printed dict that holds a value no progress line prints: a word in quotes, ``None``,
#: ``True``/``False`` — a record of settings (scikit-learn's ``best_params_``: ``{'C': 0.1,
#: 'l1_ratio': 0.5, 'solver': 'saga'}``), not a training's numbers (``{'loss': 0.3, 'epoch': 1}``)
_SETTINGS_VALUE = re.compile(
    r"""\{[^{}]*['"][^'"]+['"][ \t]*:[ \t]*(?:['"](?![-+]?(?:\d|\.\d|nan|inf))|None\b|True\b|False\b)""",
    re.IGNORECASE,
)
_UNSAFE = re.compile(r"[^\w./\-]+")  # in a name; structured keys may hold anything
_TRAILING = " \t,;)]}|'\""
_MAX_PLANS = 4096  # shapes of progress line remembered


class _Plan:
    """The keys of one shape of line, which of them may give the step, and per step choice
    the ``(index, name)`` pairs to store."""

    __slots__ = ("names", "steps", "keep")

    def __init__(self, names: list[str], steps: list[int]) -> None:
        self.names = names
        self.steps = steps
        self.keep: dict[int, list[tuple[int, str]]] = {}


class LineMetrics:
    """An event step (``(batch, now, final) -> batch``) that leaves the batch as it is and
    collects the metrics its lines carry; ``take(now)`` hands over the points to store.

    A new name's points are held ``hold`` seconds, then the name is handed over only if the
    run does not have it already from the workload's own SDK calls (``take``'s ``claimed``):
    a metric the script logs with the SDK and also prints is the SDK's alone. Points of names
    already handed over go out at the next ``take``.
    """

    def __init__(
        self,
        stats: dict[str, int] | None = None,
        *,
        max_names: int = MAX_NAMES,
        hold: float = 2.0,
        max_rate: int = MAX_RATE,
    ) -> None:
        self.stats = stats if stats is not None else {}
        self.stats.setdefault("line_metrics", 0)
        self.stats.setdefault("line_metric_names_dropped", 0)
        self.stats.setdefault("line_metric_names_sdk", 0)
        self.stats.setdefault("line_metrics_dropped", 0)
        self.stats.setdefault("line_metrics_sampled_out", 0)
        self.max_names = max_names
        self.broken: str | None = None  # why reading stopped, after an internal error
        self.max_rate = max_rate
        self._window = -math.inf
        self._seen = 0
        self.hold = hold
        self.names: set[str] = set()
        self._refused: set[str] = set()
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self._next_step = 0
        self._held: list[tuple[int, float, dict[str, float]]] = []
        self._handed: set[str] = set()  # names written from lines
        self._ceded: set[str] = set()  # names the SDK logs: never written from lines
        self._lock = threading.Lock()  # the pump thread adds; the runner's threads take
        self._take_lock = threading.Lock()

    # --- the event step -----------------------------------------------------------------

    def __call__(self, batch: LogBatch, now: float, final: bool) -> LogBatch:
        if len(batch) and not self.broken:
            with self._lock:
                try:
                    self._scan(batch)
                except Exception as exc:  # a bug here must never cost the logs: stop reading
                    self.broken = repr(exc)
        return batch

    def _scan(self, batch: LogBatch) -> None:
        """Read the batch's candidate lines. A flood is sampled: all of the first ``max_rate``
        candidates of each second are read, then every k-th (k growing with the flood) and every
        line with a NaN or an infinity, so a non-finite value is never missed."""
        messages = batch.message
        fields = batch.fields
        times = batch.time
        rate = self.max_rate
        window, seen = self._window, self._seen
        skipped = 0
        find = _PAIR.findall
        nonfinite = _NONFINITE.search
        for i, message in enumerate(messages):
            extra = fields[i]
            if extra:
                if "block" in extra:
                    continue  # a traceback or another stack dump
                pairs = [(k, v) for k, v in extra.items() if isinstance(k, str) and _numeric(v)]
                if pairs:
                    self._line(pairs, times[i], structured=True)
                continue
            separated = "=" in message or ": " in message
            spaced = _SPACED_GATE in message
            if not (separated or spaced) or "\n" in message:
                continue
            t = times[i]
            if t - window >= 1.0:
                window, seen = t, 0
            seen += 1
            if seen > rate and seen % (seen // rate + 1) and nonfinite(message) is None:
                skipped += 1
                continue
            pairs = find(message) if separated else []
            if spaced:
                pairs = _with_spaced(message, pairs)
            if pairs and (len(pairs) > 1 or _ends_line(message, pairs[0][1])) and not _settings(message, pairs):
                self._line(pairs, t)
        self._window, self._seen = window, seen
        if skipped:
            self.stats["line_metrics_sampled_out"] += skipped

    def _line(self, pairs: list[tuple[str, Any]], time: float, structured: bool = False) -> None:
        keys = (structured, *[key for key, _ in pairs])
        plan = self._plans.get(keys)
        if plan is None:
            plan = self._plan(keys)
        step: int | None = None
        chosen = -1
        for i in plan.steps:
            step = _as_step(pairs[i][1])
            if step is not None:
                chosen = i
                break
        keep = plan.keep.get(chosen)
        if keep is None:
            keep = plan.keep[chosen] = self._keep(plan.names, chosen, structured)
        if not keep:
            return
        values = {name: float(pairs[i][1]) for i, name in keep}
        if step is None:
            step = self._next_step
        if step >= self._next_step:
            self._next_step = step + 1
        if len(self._held) >= MAX_HELD:  # nobody takes them: keep memory bounded, count
            self.stats["line_metrics_dropped"] += len(values)
            return
        self._held.append((step, time, values))
        self.stats["line_metrics"] += len(values)

    def _plan(self, keys: tuple[Any, ...]) -> _Plan:
        """What a line with these keys gives, worked out once per shape of line: progress
        lines repeat the same keys thousands of times."""
        names = list(keys[1:])
        steps = [i for i, k in enumerate(names) if k.lower() in _STEP_KEYS]
        steps += [i for i, k in enumerate(names) if k.lower() in _EPOCH_KEYS]
        plan = _Plan(names, steps)
        if len(self._plans) < _MAX_PLANS:
            self._plans[keys] = plan
        return plan

    def _keep(self, names: list[str], step_index: int, structured: bool) -> list[tuple[int, str]]:
        """``(index, metric name)`` of the pairs to store when ``step_index`` gave the step
        (-1: none did); empty when the line is not progress."""
        wanted = [
            (i, _UNSAFE.sub("_", key.strip())[:_NAME_CHARS])
            for i, key in enumerate(names)
            if i != step_index and not is_secret_name(key) and key.strip() and not _never_metric(key)
        ]
        # Not clearly progress: one number in a sentence ("retrying in: 5"), or a structured log
        # line's numeric fields ({"pid": 12, "port": 8080}).
        if (
            not wanted
            or step_index < 0
            and (structured or len(wanted) < 2)
            and not any(_TRAINING_WORDS.search(name) for _, name in wanted)
        ):
            return []
        return [(i, name) for i, name in wanted if self._admit(name)]

    def _admit(self, name: str) -> bool:
        names = self.names
        if name in names:
            return True
        if len(names) < self.max_names:
            names.add(name)
            return True
        if name not in self._refused:
            self._refused.add(name)
            self.stats["line_metric_names_dropped"] += 1
        return False

    # --- handing over ---------------------------------------------------------------------

    def take(
        self, now: float, final: bool = False, claimed: Callable[[], Collection[str]] | None = None
    ) -> list[tuple[int, float, dict[str, float]]]:
        """The points to store now, oldest first: those whose names are all known already,
        and the others once they are ``hold`` seconds old (all of them with ``final``).

        ``claimed`` returns the names the run already has from elsewhere (the workload's own
        SDK calls); it is asked once per call, and only when a name is handed over for the
        first time. A claimed name is never written from lines (``line_metric_names_sdk``)."""
        with self._take_lock:
            with self._lock:
                held = self._held
                if not held:
                    return []
                known = self._handed
                limit = now - self.hold
                ready: list[tuple[int, float, dict[str, float]]] = []
                waiting: list[tuple[int, float, dict[str, float]]] = []
                for point in held:
                    if final or point[1] <= limit or known.issuperset(point[2]):
                        ready.append(point)
                    else:
                        waiting.append(point)
                self._held = waiting
            return self._unclaimed(ready, claimed)

    def _unclaimed(
        self, ready: list[tuple[int, float, dict[str, float]]], claimed: Callable[[], Collection[str]] | None
    ) -> list[tuple[int, float, dict[str, float]]]:
        fresh = {name for _, _, values in ready for name in values} - self._handed - self._ceded
        if fresh:
            taken: Collection[str] = ()
            if claimed is not None:
                try:
                    taken = claimed()
                except Exception:  # the store is away: nothing is known to be claimed
                    taken = ()
            for name in fresh:
                if name in taken:
                    self._ceded.add(name)
                    self.stats["line_metric_names_sdk"] += 1
                else:
                    self._handed.add(name)
        if not self._ceded:
            return ready
        out = []
        for step, time, values in ready:
            kept = {k: v for k, v in values.items() if k not in self._ceded}
            if kept:
                out.append((step, time, kept))
        return out


def _settings(message: str, pairs: list[tuple[str, Any]]) -> bool:
    """Whether a line prints a dict of settings rather than progress: one with a non-numeric
    value and no key that names a step or a training quantity (a search's best parameters: its
    ``C`` and ``l1_ratio`` are no metrics of the run)."""
    if "{" not in message or _SETTINGS_VALUE.search(message) is None:
        return False
    return not any(
        key.lower() in _STEP_KEYS or key.lower() in _EPOCH_KEYS or _TRAINING_WORDS.search(key) for key, _ in pairs
    )


def _never_metric(key: str) -> bool:
    return key.strip().lower().replace("-", "_") in NEVER_METRICS


def _with_spaced(message: str, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` with the line's space-separated pairs of a step key or a training quantity
    (:data:`_SPACED`) that ``key=value`` / ``key: value`` did not give, when one of them all names
    a training quantity: ``step 3 of 10`` alone gives nothing."""
    spaced = _SPACED.findall(message)
    if not spaced:
        return pairs
    have = {key.lower() for key, _ in pairs}
    if not have.isdisjoint(_STEP_KEYS) or not have.isdisjoint(_EPOCH_KEYS):
        have.update(_STEP_KEYS, _EPOCH_KEYS)  # the line's step is given: ``epoch 1 | step: 20`` is step 20, no metric
    extra = []
    for key, value in spaced:
        name = key.replace(" ", "_")
        if name.lower() not in have:  # the first of a key (two ranks' lines run together repeat it)
            have.add(name.lower())
            extra.append((name, value))
    if not extra or not any(_TRAINING_WORDS.search(key) for key, _ in (*pairs, *extra)):
        return pairs
    return pairs + extra


def _ends_line(message: str, value: str) -> bool:
    """A lone pair counts only at the end of its line (``step 5 loss=0.3``, tqdm's ``loss=0.1]``),
    not inside a sentence (``loss=NaN guard enabled; will skip batches``)."""
    end = message.rfind(value) + len(value)
    return not message[end:].strip(_TRAILING)


def _numeric(value: Any) -> bool:
    kind = type(value)
    if kind is int or kind is float:
        return True
    if kind is str and value and (value[0].isdigit() or value[0] in "-+.nNiI"):
        return _PAIR.fullmatch(f"x={value}") is not None
    return False


def _as_step(value: Any) -> int | None:
    if type(value) is str and value.isdigit():
        return int(value)
    if type(value) is int:
        return value if value >= 0 else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number) or number != int(number) or number < 0:
        return None
    return int(number)
