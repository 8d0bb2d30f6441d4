"""Fold new corpus entries into ``dev.yaml`` and ``heldout.yaml`` under the split rule.

    python -m tests.diagnose.corpus.fold [FILE ...]        # default: /work/corpus_incoming/*.yaml
    python -m tests.diagnose.corpus.fold --check FILE ...  # validate only, write nothing

Every entry already in the corpus is kept. A new entry is validated (a category of the
taxonomy, a GitHub thread URL, a non-empty message, a known ending) and dropped with a reason
when it is not, deduplicated against everything before it (the same text, whitespace aside),
and written to the set its repository hashes to (:func:`~tests.diagnose.corpus.load.held_out`).
The files are rewritten whole, in a stable order (the existing entries first, in their order,
then the new ones in the order of the input files), with the header that records the rule.
"""

from __future__ import annotations

import argparse
import glob
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES
from tests.diagnose.corpus.load import HELD_OUT_PERCENT, HERE, SETS, held_out, load_set, repository

__all__ = ["fold", "validate", "write_set", "HEADER", "ENDING"]

DEFAULT_INPUTS = "/work/corpus_incoming/*.yaml"
#: the categories a failure of the corpus may have
EXPECTED = (*FAILURE_CATEGORIES, "nan_loss")
#: how a thread says the process ended: ``exit 137``, ``SIGKILL``, ``signal 9``
ENDING = re.compile(r"^(?:exit -?\d{1,3}|SIG[A-Z]{2,6}|signal \d{1,2})$")
_THREAD = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d+(?:[#?/][\w=&#./-]*)?$")
_KEYS = ("message", "expected", "source", "library", "ending", "note", "origin")

HEADER = """\
# Real failure messages from public issue trackers, quoted (trimmed to the lines that matter)
# as test data for the diagnosis: each entry is what a failed run's log ended with, the
# taxonomy category a person would give it, and the thread it was quoted from. Trimming only
# drops lines, stack frames and the prefixes a reporter's tool added (pytest's "E   ", a log
# shipper's timestamps); the error text itself is as the thread shows it.
#
#   message:  the text as the run printed it (one log event; a Python traceback stays whole)
#   expected: the category of docs/troubleshooting.md
#   source:   the issue or pull request it comes from
#   library:  the top-level Python package the failure comes from (where recorded)
#   ending:   how the process ended, where the thread says ("exit 137", "SIGKILL", "exit 0")
#   note:     why that category, where it is not obvious
#   origin:   corpus-v1 for the entries of the first corpus
#
# benign: lines that healthy runs print (warnings, retries that worked, deprecations); none of
# them may be a lead (confidence 0.5 or more).
#
# This is the {name} set. SPLIT RULE (issue 29, replacing issue 23's hash of the message): an
# entry is held out when the GitHub repository of its source (owner/name, lower-cased) hashes
# into the held-out share: int(sha256(repository)[:8], 16) % 100 < {percent}. A repository is
# never on both sides. The ranker is trained on dev.yaml only; heldout.yaml is only ever
# scored (python -m tests.diagnose.corpus.score, scripts in README.md). New entries are folded
# in by python -m tests.diagnose.corpus.fold, never placed by hand.
"""


def validate(entry: Any, kind: str) -> str | None:
    """Why ``entry`` (of ``failures`` or ``benign``) cannot be taken, or None when it can."""
    if not isinstance(entry, dict):
        return "not a mapping"
    message = entry.get("message")
    if not isinstance(message, str) or not message.strip():
        return "an empty message"
    source = entry.get("source")
    if not isinstance(source, str) or not _THREAD.match(source.strip()) or repository(source) is None:
        return f"source {source!r} is not a GitHub issue, pull request or discussion URL"
    if kind == "failures" and entry.get("expected") not in EXPECTED:
        return f"category {entry.get('expected')!r} is not one of {', '.join(EXPECTED)}"
    if "library" in entry and not (isinstance(entry["library"], str) and re.match(r"^[\w.-]+$", entry["library"])):
        return f"library {entry.get('library')!r} is not a package name"
    if "ending" in entry and not (isinstance(entry["ending"], str) and ENDING.match(entry["ending"].strip())):
        return f"ending {entry.get('ending')!r} is not 'exit N', 'SIGNAME' or 'signal N'"
    unknown = set(entry) - set(_KEYS)
    if unknown:
        return f"unknown keys {sorted(unknown)}"
    return None


def _key(message: str) -> str:
    return " ".join(message.split())


def _clean(entry: dict[str, Any]) -> dict[str, Any]:
    out = {k: entry[k] for k in _KEYS if k in entry and entry[k] not in (None, "")}
    if "source" in out:
        out["source"] = out["source"].strip()
    if "ending" in out:
        out["ending"] = out["ending"].strip()
    return out


def fold(inputs: list[Path]) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], list[str]]:
    """The new contents of the sets, and what was dropped (one line each, with the reason)."""
    sets: dict[str, dict[str, list[dict[str, Any]]]] = {name: {"failures": [], "benign": []} for name in SETS}
    seen: set[str] = set()
    dropped: list[str] = []
    existing = [(kind, e) for name in SETS for kind in ("failures", "benign") for e in load_set(name)[kind]]
    new: list[tuple[str, dict[str, Any], str]] = []
    for path in inputs:
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            dropped.append(f"{path}: not valid YAML, skipped whole ({str(exc).splitlines()[0]})")
            continue
        for kind in ("failures", "benign"):
            for index, entry in enumerate(data.get(kind) or []):
                new.append((kind, entry, f"{path.name}:{kind}[{index}]"))
    for kind, entry in existing:  # every existing entry stays, whatever a later rule says
        seen.add(_key(entry["message"]))
        sets["heldout" if held_out(entry) else "dev"][kind].append(_clean(entry))
    for kind, entry, where in new:
        why = validate(entry, kind)
        if why is None and _key(entry["message"]) in seen:
            why = "a duplicate of an entry before it"
        if why is not None:
            dropped.append(f"{where}: {why}")
            continue
        seen.add(_key(entry["message"]))
        sets["heldout" if held_out(entry) else "dev"][kind].append(_clean(entry))
    return sets, dropped


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def write_set(name: str, data: dict[str, list[dict[str, Any]]], directory: Path = HERE) -> Path:
    path = directory / f"{name}.yaml"
    body = yaml.dump(
        {"failures": data["failures"], "benign": data["benign"]},
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=10_000,
    )
    path.write_text(HEADER.format(name=name, percent=HELD_OUT_PERCENT) + body)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.diagnose.corpus.fold", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help=f"YAML files of new entries (default: {DEFAULT_INPUTS})")
    parser.add_argument("--check", action="store_true", help="validate and report; write nothing")
    args = parser.parse_args(argv)
    inputs = [Path(f) for f in (args.files or sorted(glob.glob(DEFAULT_INPUTS)))]
    sets, dropped = fold(inputs)
    for line in dropped:
        print(f"dropped {line}", file=sys.stderr)
    total = sum(len(sets[n]["failures"]) for n in SETS)
    for name in SETS:
        n = len(sets[name]["failures"])
        print(f"{name}: {n} failures ({n / max(total, 1):.1%}), {len(sets[name]['benign'])} benign lines")
        if not args.check:
            # a round trip proves the file reads back exactly as folded
            path = write_set(name, sets[name])
            again = yaml.safe_load(path.read_text())
            assert again["failures"] == sets[name]["failures"] and again["benign"] == sets[name]["benign"], path
    return 0


if __name__ == "__main__":
    sys.exit(main())
