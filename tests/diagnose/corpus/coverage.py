"""How far the rules reach: ``python -m tests.diagnose.corpus.coverage [--set dev] [--format json]``.

Splits each set's top-1 (right at confidence >= 0.5, message level as :mod:`.score` replays
it) by whether any rule named the expected category (a hit at ``CANDIDATE_FLOOR`` or more) —
overall and per category, as counts only. Why (issue 29): on the held-out repositories the
diagnosis was right ~93 % of the time where a rule named the category and ~20 % where none did,
so the held-out top-1 follows the rules' coverage; this is the figure to watch when a change adds
rules or data. It never lists held-out entries (``--unnamed`` lists dev's failures no rule names:
what the next rules should read).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from typing import Any

from flightlog.diagnose.candidates import CANDIDATE_FLOOR, collect
from flightlog.diagnose.ranker import rank
from tests.diagnose.corpus.load import SETS, load_set
from tests.diagnose.corpus.replay import replay
from tests.diagnose.corpus.score import LEAD

__all__ = ["coverage", "main"]


def _named(entry: dict[str, Any], hits: list[Any]) -> bool:
    """Whether a rule named the entry's expected category (a candidate's hit, not a trace)."""
    return any(h.category == entry["expected"] and h.weight >= CANDIDATE_FLOOR for h in hits)


def _read(entry: dict[str, Any]) -> tuple[bool, bool]:
    """(a rule named the expected category, the diagnosis's lead is it at LEAD or more)."""
    read = replay(entry)
    hits = collect(read)
    named = _named(entry, hits)
    ranked = rank(read, hits)
    right = bool(ranked) and ranked[0].category == entry["expected"] and ranked[0].confidence >= LEAD
    return named, right


def coverage(name: str) -> dict[str, Any]:
    """The counts of one set: failures, named (and right among them), unnamed (and right)."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for entry in load_set(name)["failures"]:
        named, right = _read(entry)
        side = "named" if named else "unnamed"
        for key in ("all", entry["expected"]):
            per[key][side] += 1
            per[key][f"{side}_right"] += right
    figures = {key: {k: c[k] for k in ("named", "named_right", "unnamed", "unnamed_right")} for key, c in per.items()}
    total = figures.pop("all")
    n = total["named"] + total["unnamed"]
    return {
        "set": name,
        "failures": n,
        **total,
        "coverage": round(total["named"] / n, 3) if n else None,
        "top1_at_0_5": round((total["named_right"] + total["unnamed_right"]) / n, 3) if n else None,
        "per_category": dict(sorted(figures.items())),
    }


def _unnamed_dev() -> list[str]:
    out = []
    for entry in load_set("dev")["failures"]:
        if not _named(entry, collect(replay(entry))):
            out.append(f"{entry['expected']}\t{entry['source']}\t{entry['message'].strip().splitlines()[-1][:200]}")
    return out


def _render(report: dict[str, Any]) -> str:
    def share(right: int, n: int) -> str:
        return f"{right}/{n} right ({100 * right / n:.1f} %)" if n else "none"

    lines = [
        f"{report['set']}: {report['failures']} failures, top-1 at 0.5 {100 * (report['top1_at_0_5'] or 0):.1f} %",
        f"  a rule named the category: {share(report['named_right'], report['named'])}",
        f"  no rule named it:          {share(report['unnamed_right'], report['unnamed'])}",
    ]
    for category, c in report["per_category"].items():
        lines.append(
            f"    {category:<20} named {c['named']:>4} right {c['named_right']:>4}"
            f" | unnamed {c['unnamed']:>4} right {c['unnamed_right']:>4}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.diagnose.corpus.coverage", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--set", choices=SETS, action="append", help="only this set (repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--unnamed", action="store_true", help="list dev's failures no rule names (never held out)")
    args = parser.parse_args(argv)
    if args.unnamed:
        print("\n".join(_unnamed_dev()))
        return 0
    reports = [coverage(name) for name in (args.set or SETS)]
    if args.format == "json":
        print(json.dumps({r["set"]: r for r in reports}, indent=2))
    else:
        print("\n\n".join(_render(r) for r in reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
