"""The learned ranker over the rules: which candidate category is the failure's, and how sure.

Why learned: rules tuned one message at a time reached their limit (issue 29). The rules stay
the source of evidence — every candidate is a category some rule found, and every finding
cites the lines its rules matched — but how much a rule is worth *where it matched* (on the
innermost cause or on the wrapper, on the last line or on a handled error earlier, with which
exit) is learned from the corpus's development side by a conditional logit (a logistic
regression whose classes are the candidates of each failure), and calibrated by a temperature
fitted on out-of-fold predictions grouped by repository, so the confidence is a probability:
of the answers given at 0.8, about eight in ten are right.

Features are facts of the structure, and the words of the failure's own message: per candidate
category, the strongest weight
of its rules at each place (``pos:inner``, ``pos:outer``, ``pos:tail``, ``pos:exit``), each
rule that fired, and the facts of :func:`flightlog.diagnose.facts.structure_facts` crossed with
it — the innermost exception's type and library (only those seen across several repositories in
training), where and how it was raised (the workload's code or a library, a ``raise`` or a
failed operation, a validation or configuration function near it), its class name's words, its
message's shape, the codes of the chain, the exit code's and signal's kind, the memory at the
end; and the words of the innermost exception's message (:func:`message_words`: the cause's,
never a wrapper's nor a line's), each crossed with the candidate — kept by the training only where seen in at
least two repositories, so a word is evidence across libraries ("quota", "divisible", "mismatch")
and never one project's vocabulary.

Two stages: the exception's own words first. When a specific rule (not ``code_error``'s, which
every exception matches) names one category strongly on the innermost exception of a failed
process (:func:`specific_evidence`), that category's confidence is at least the lower bound of
how often such a rule was right on the training side (``floors``, counted by the training
script); the logit decides above it and orders the rest. Why: a conditional logit spreads the probability of an exception it
cannot place over the categories it often sees (a ValueError raised in the workload's own code
with a clear message got 0.16 for ``bad_parameter`` beside 0.22 for a ``dependency_error`` no
rule named); a rule that is right nine times in ten on the innermost exception is evidence the
logit cannot outvote with a prior.

The fitted model ships as ``ranker.json`` (a weight per feature name, the temperature, the floors);
scoring is a sparse dot product and a softmax in plain Python, so the fast classifier that
``flightlog run`` calls imports neither scikit-learn nor numpy. ``python -m
tests.diagnose.corpus.train`` refits it; ``tests/diagnose/test_ranker.py`` checks that refitting
reproduces the shipped file from the corpus it names.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightlog.diagnose.candidates import CANDIDATE_FLOOR, Hit
from flightlog.diagnose.facts import structure_facts
from flightlog.diagnose.signals import MAX_CONFIDENCE, Signal, combine, line_factor
from flightlog.diagnose.structure import FailureRead
from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES
from flightlog.notices import notice

__all__ = [
    "Ranked",
    "rank",
    "candidate_features",
    "Model",
    "load_model",
    "shipped_model",
    "rule_order",
    "specific_evidence",
    "MODEL_PATH",
    "POSITIONS",
    "NONE",
    "CANDIDATES",
    "STRUCTURE",
]

MODEL_PATH = Path(__file__).with_name("ranker.json")
POSITIONS = ("only", "inner", "middle", "outer", "line", "tail", "last", "handled", "exit", "resources")
#: the vias whose hits get a feature of their own (how a link entered the chain)
_VIAS = ("worker", "wrapped", "cause", "context")
#: every category a failed process can be given: each is a candidate of every failure, so a
#: category no rule names can still be chosen from the structure (a ValueError raised in a
#: library's configuration code)
CANDIDATES = (*FAILURE_CATEGORIES, "nan_loss")


@dataclass
class Ranked:
    """One candidate category: its calibrated confidence and the evidence its rules found."""

    category: str
    confidence: float
    hits: list[Hit]

    @property
    def signals(self) -> list[Signal]:
        """The evidence, strongest first, one signal per rule and place."""
        best: dict[tuple[str, str], Signal] = {}
        for h in self.hits:
            key = (h.rule, h.signal.detail)
            if key not in best or h.weight > best[key].weight:
                best[key] = h.signal
        return sorted(best.values(), key=lambda s: -s.weight)


@dataclass(frozen=True)
class Model:
    """A conditional logit over the candidates of one failure: each candidate (every failure
    category, and ``none`` — nothing failed, or nothing says what) gets the score
    ``weights · features``, and the probabilities are the softmax of the scores divided by a
    temperature. The weights are shared by all candidates, so what a place of the chain is
    worth is learned once for every category; what is a category's own (its bias, its rules,
    the structure facts crossed with it) has features of its own."""

    weights: dict[str, float]
    temperature: float
    meta: dict[str, Any]
    #: how often the exception's own words were right on the training side, by rule (and by
    #: category for a rule too rarely seen): see :func:`specific_evidence`
    floors: dict[str, float] = field(default_factory=dict)

    def probabilities(self, candidates: dict[str, dict[str, float]]) -> dict[str, float]:
        scores = {}
        w = self.weights
        for category, features in candidates.items():
            z = 0.0
            for name, value in features.items():
                coef = w.get(name)
                if coef is not None:
                    z += coef * value
            scores[category] = z / self.temperature
        top = max(scores.values())
        exps = {c: math.exp(z - top) for c, z in scores.items()}
        total = sum(exps.values())
        return {c: e / total for c, e in exps.items()}

    def floor(self, hit: Hit) -> float:
        """How often the training side's failures were ``hit.category`` when this rule named it
        on the innermost exception (:func:`specific_evidence`); 0 when never seen."""
        return self.floors.get(f"rule:{hit.rule}", self.floors.get(f"category:{hit.category}", 0.0))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Model:
        return cls(
            {str(k): float(v) for k, v in data["weights"].items()},
            float(data["calibration"]["temperature"]),
            {k: v for k, v in data.items() if k not in ("weights", "calibration")},
            {str(k): float(v) for k, v in data["calibration"].get("floors", {}).items()},
        )


@functools.lru_cache(maxsize=1)
def load_model(path: str | None = None) -> Model:
    """The shipped model (read once per process)."""
    data = json.loads(Path(path or MODEL_PATH).read_text())
    return Model.from_dict(data)


@functools.lru_cache(maxsize=1)
def shipped_model() -> Model | None:
    """The shipped model, or None — with one notice per process — when it is missing or cannot
    be read (an install without its package data, a damaged file): diagnosis then orders the
    rules' own evidence (:func:`rule_order`) rather than raising into the user's run."""
    try:
        return load_model()
    except Exception as exc:  # a missing, unreadable or malformed ranker.json: never the user's error
        notice(
            f"the diagnosis model could not be read ({type(exc).__name__}: {exc}); "
            "failures are ordered by their rules' evidence alone"
        )
        return None


NONE = "none"
#: the place of an earlier traceback's exception line that the program went on after
HANDLED = "handled"
#: the value of a structure fact crossed with a category: below 1, so that the L2 penalty holds
#: these many, sparsely seen features back more than the rules' (a category's own facts must be
#: seen often before they outweigh what its rules found)
FACT_SCALE = 0.2
#: the value of a word of the failure's own message crossed with a category (see `message_words`)
WORD_SCALE = 0.3
#: a word: three letters or more; digits, paths' punctuation and case are not part of it
_WORD = re.compile(r"[a-z]{3,}")
#: how much of the message its words are taken from
_WORD_SPAN = 2000


def message_words(read: FailureRead) -> set[str]:
    """The words of the failure's own message: the innermost exception's (the cause, never a
    wrapper's); none when no exception was read — a healthy run's last line ("done: model saved")
    is no message, and its words lifted a retry it had logged to a lead. Why words and not only
    facts: grouped by repository, five-fold cross-validation rose from 76.4 % to 78.3 % top-1
    with them, held-out repositories from 72.9 % to 76.1 % (issue 29) —
    "quota", "divisible", "checksum" say what went wrong in every library that prints them, and
    the training keeps only the words seen in two repositories or more, so a project's own
    vocabulary never becomes a feature."""
    inner = read.innermost
    if inner is None:
        return set()
    return set(_WORD.findall(inner.message[:_WORD_SPAN].lower()))


def _logit(p: float) -> float:
    p = min(max(p, 0.01), 0.99)
    return math.log(p / (1.0 - p))


#: the confidence given to a failing exit that nothing explains (no exception, no rule)
UNEXPLAINED = 0.25
UNEXPLAINED_RULE = "a_failing_exit"


def rank(read: FailureRead, hits: Sequence[Hit], model: Model | None = None) -> list[Ranked]:
    """Every failure category, by calibrated probability, highest first (``none`` left out: its
    share is what keeps every category's confidence low when nothing says what failed)."""
    if not read.links and all(h.rule == UNEXPLAINED_RULE for h in hits):
        # nothing to go on but a failing exit: the model's prior is no answer; say so, weakly
        return [Ranked("code_error", UNEXPLAINED, list(hits))] if hits else []
    model = model or shipped_model()
    if model is None:
        return rule_order(hits)
    probabilities = model.probabilities(candidate_features(read, hits))
    specific = specific_evidence(read, hits)
    if specific is not None:
        probabilities = _floored(probabilities, specific.category, model.floor(specific))
    by_category: dict[str, list[Hit]] = {}
    for h in hits:
        by_category.setdefault(h.category, []).append(h)
    out = [
        Ranked(c, round(min(MAX_CONFIDENCE, p), 2), by_category.get(c) or _structural_evidence(read, c))
        for c, p in probabilities.items()
        if c != NONE
    ]
    out.sort(key=lambda r: (-r.confidence, -max((h.weight for h in r.hits), default=0.0), r.category))
    return out


#: a rule this strong on the innermost exception is the exception's own words naming a category
SPECIFIC = 0.5
#: the places of the innermost exception (the only one, or the innermost cause of a chain)
_INNERMOST = ("only", "inner")


def specific_evidence(read: FailureRead, hits: Sequence[Hit]) -> Hit | None:
    """The first stage: the strongest hit of a specific rule (any but ``code_error``'s, which
    every exception matches — its own specific rules only when no other category's fired) on the
    innermost exception of a failed process, when such hits name one category only — the exception's own words say what failed (``ValueError: Invalid
    learning rate: -0.01`` raised in the workload's code names a bad parameter whatever the
    output around it). The exception must have been raised: read from a traceback, or from
    exception lines whose last is an error's, not a warning's that quotes it ("Retrying ...
    after connection broken by ReadTimeoutError(...)"). None when such hits name no category
    or several (then the ranker alone decides)."""
    if read.exit_code in (None, 0) and read.signal is None and not read.timed_out and not read.oom_killed:
        return None
    if not read.from_traceback and line_factor(read.last_line or "") < 1.0:
        return None  # an exception named in a warning or a retry, not raised: no words of its own
    innermost = [h for h in hits if h.position in _INNERMOST and h.weight >= SPECIFIC]
    found = [h for h in innermost if h.category != "code_error"]
    if not found:
        # the code's own mistake in the exception's own words (a tensor shape that does not fit,
        # a query that does not parse), when nothing else is named: its words come first as
        # well (issue 29: a SQL syntax error in sqlite3, a data library, read data_error 0.73)
        found = [h for h in innermost if h.category == "code_error" and not h.generic]
    if not found or len({h.category for h in found}) > 1:
        return None
    return max(found, key=lambda h: (h.weight, h.rule))


def _floored(probabilities: dict[str, float], category: str, floor: float) -> dict[str, float]:
    """The second stage: ``category``'s probability raised to ``floor`` when the ranker gave it
    less, the others scaled down in proportion (they still sum to one, in the same order)."""
    p = probabilities.get(category, 0.0)
    if p >= floor or p >= 1.0:
        return probabilities
    scale = (1.0 - floor) / (1.0 - p)
    return {c: floor if c == category else q * scale for c, q in probabilities.items()}


def rule_order(hits: Sequence[Hit]) -> list[Ranked]:
    """Without the model: each category its rules found, by the noisy-OR of its evidence (a
    handled earlier error left out, as the model leaves it out of what a category pools to)."""
    by_category: dict[str, list[Hit]] = {}
    for h in hits:
        if h.weight >= CANDIDATE_FLOOR and h.position != HANDLED:
            by_category.setdefault(h.category, []).append(h)
    scores = combine(h.signal for hs in by_category.values() for h in hs)
    return [Ranked(s.category, s.confidence, by_category[s.category]) for s in scores if s.category in by_category]


#: the rule (and signal id) of a category no rule named, chosen from the failure's structure alone
STRUCTURE = "structure"


def _structural_evidence(read: FailureRead, category: str) -> list[Hit]:
    """What a category no rule named was chosen from: the exception and where it was raised."""
    link = read.innermost if read.innermost is not None and read.innermost.via == "worker" else read.outermost
    if link is None:
        if not read.last_line:
            return []
        detail = f"the last line printed: {read.last_line[:280]}"
    else:
        frame = link.frames[-1] if link.frames else None
        where = f" raised in {link.library or 'the workload'}" + (f" at {frame.where()}" if frame else "")
        detail = f"{link.statement()[:280]}{where}"
    return [Hit(category, STRUCTURE, 0.0, "structure", "", "", Signal(category, 0.0, STRUCTURE, "traceback", detail))]


# ── features ─────────────────────────────────────────────────────────────────
def candidate_features(read: FailureRead, hits: Sequence[Hit]) -> dict[str, dict[str, float]]:
    """``{candidate: {feature: value}}`` for one failure: every failure category and ``none``.

    A category's features: its bias; the strongest weight of its rules at each place, shared
    (``pos:inner``) and its own (``bad_parameter|pos:inner``), with the line's own level
    (``pos:last.warning``) and the link's way into the chain (``via:worker``); each of its
    rules (``data_error|rule:...``); its pooled rule confidence and whether it leads; and the
    facts of the structure crossed with it (``bad_parameter|inner:ValueError``,
    ``bad_parameter|frame:validation``, ``dependency_error|msg:namespace``,
    ``oom_killed|exit:sigkill``; :func:`~flightlog.diagnose.facts.structure_facts`, the one
    function that computes them for training and for every diagnosis). ``none``'s: its bias,
    the facts crossed with it, and how strong the strongest category's evidence is."""
    by_category: dict[str, list[Hit]] = {c: [] for c in CANDIDATES}
    for h in hits:
        if h.weight >= CANDIDATE_FLOOR:
            by_category.setdefault(h.category, []).append(h)
    # a handled earlier error is context, not the failure: it is a place of its own
    # (``pos:handled``), never part of what a category's live evidence pools to, leads with or
    # counts as rules, so that a caught FileNotFoundError cannot outvote the chain that ended
    # the process
    live = {c: [h for h in hs if h.position != HANDLED] for c, hs in by_category.items()}
    pooled = {s.category: s.confidence for s in combine(h.signal for hs in live.values() for h in hs)}
    best = max(pooled.values(), default=0.0)
    facts = structure_facts(read)
    words = message_words(read)
    out: dict[str, dict[str, float]] = {}
    for category, found in by_category.items():
        f: dict[str, float] = {category: 1.0}
        mine = live[category]
        for h in found:
            names = [f"pos:{h.position}", f"{category}|pos:{h.position}"]
            if h.position != HANDLED:
                names.append(f"{category}|rule:{h.rule}")
            if h.kind:
                names.append(f"pos:{h.position}.{h.kind}")
            if h.via in _VIAS:
                names.append(f"via:{h.via}")
            for name in names:
                if h.weight > f.get(name, 0.0):
                    f[name] = h.weight

        score = pooled.get(category, 0.0)
        others = max((v for k, v in pooled.items() if k != category), default=0.0)
        if mine:
            f["pooled_logit"] = _logit(score)
            f["margin"] = score - others
            f[f"{category}|pooled"] = score
            if score >= others:
                f["leads"] = 1.0
                f[f"{category}|leads"] = 1.0
            f["rules"] = min(len({h.rule for h in mine}), 5) / 5
        for fact in facts:
            f[f"{category}|{fact}"] = FACT_SCALE
        for word in words:
            f[f"{category}|w:{word}"] = WORD_SCALE
        out[category] = f
    none: dict[str, float] = {NONE: 1.0, "none|best": best, "none|best_logit": _logit(best)}
    for fact in facts:
        none[f"none|{fact}"] = FACT_SCALE
    for word in words:
        none[f"none|w:{word}"] = WORD_SCALE
    out[NONE] = none
    return out
