"""Score the fast classifier on the corpus: ``python -m tests.diagnose.corpus.score``.

Each failure is replayed the way tests/diagnose/corpus/replay.py says (the message as the last
log event of a process that ended as the entry's ``ending`` says, else exit 1); each benign
line as the only line of a process that exited 1. This is the message-level score; the
end-to-end score (whole runs under ``flightlog run``) is ``python -m tests.diagnose.corpus.endtoend``.

Prints, per set: top-1 accuracy at confidence >= 0.5, the share in the right kind, per-category
precision and recall, the confusion matrix, the calibration (how often the top answer is right
at each confidence) and the benign lines at 0.5 or more. ``--format json`` prints the same as
one JSON object; ``--set dev`` limits it to one set; ``--misses`` lists dev's misses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from flightlog.diagnose.taxonomy import KIND_OF
from tests.diagnose.corpus.load import SETS, load_set
from tests.diagnose.corpus.replay import classify_benign_line, classify_entry

__all__ = ["LEAD", "BELOW", "classify_message", "classify_benign", "score_set", "summarize", "render", "main"]

#: a finding at or above this confidence is a lead (docs/architecture.md)
LEAD = 0.5
#: the column of the confusion matrix for an answer below LEAD
BELOW = "(<0.5)"


def classify_message(message: str, ending: str | None = None) -> tuple[str, float]:
    return classify_entry({"message": message, "ending": ending})


def classify_benign(message: str) -> tuple[str, float]:
    return classify_benign_line(message)


def summarize(name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a set from its rows (``expected``, ``category``, ``confidence``,
    ``predicted``, ``source``)."""
    n = len(rows)
    right = sum(r["predicted"] == r["expected"] for r in rows)
    kind = sum(KIND_OF.get(r["category"]) == KIND_OF[r["expected"]] for r in rows)
    categories = sorted({r["expected"] for r in rows} | {r["predicted"] for r in rows if r["predicted"] != BELOW})
    per_category = {}
    for c in categories:
        tp = sum(r["predicted"] == c and r["expected"] == c for r in rows)
        said = sum(r["predicted"] == c for r in rows)
        real = sum(r["expected"] == c for r in rows)
        per_category[c] = {
            "n": real,
            "precision": round(tp / said, 3) if said else None,
            "recall": round(tp / real, 3) if real else None,
        }
    confusion: dict[str, Counter[str]] = {}
    for r in rows:
        confusion.setdefault(r["expected"], Counter())[r["predicted"]] += 1
    calibration = []
    for low in (0.0, 0.5, 0.6, 0.7, 0.8, 0.9):
        high = {0.0: 0.5, 0.9: 1.01}.get(low, round(low + 0.1, 1))
        band = [r for r in rows if low <= r["confidence"] < high]
        if band:
            calibration.append(
                {
                    "confidence": f"[{low:.1f}, {min(high, 1.0):.1f}{']' if high > 1 else ')'}",
                    "n": len(band),
                    "right": round(sum(r["category"] == r["expected"] for r in band) / len(band), 3),
                }
            )
    misses = [r for r in rows if r["predicted"] != r["expected"]]
    return {
        "set": name,
        "failures": n,
        "top1_at_0_5": round(right / n, 3) if n else None,
        "right_kind": round(kind / n, 3) if n else None,
        "per_category": per_category,
        "confusion": {k: dict(v) for k, v in sorted(confusion.items())},
        "calibration": calibration,
        "misses": [{k: m.get(k) for k in ("expected", "category", "confidence", "source")} for m in misses],
    }


def score_set(name: str) -> dict[str, Any]:
    data = load_set(name)
    rows = []
    for entry in data["failures"]:
        category, confidence = classify_message(entry["message"], entry.get("ending"))
        rows.append(
            {
                "expected": entry["expected"],
                "category": category,
                "confidence": confidence,
                "predicted": category if confidence >= LEAD else BELOW,
                "source": entry.get("source", ""),
            }
        )
    report = summarize(name, rows)
    report["mode"] = "message level"
    report["benign_lines"] = len(data["benign"])
    report["benign_at_0_5"] = []
    for entry in data["benign"]:
        category, confidence = classify_benign(entry["message"])
        if confidence >= LEAD:
            report["benign_at_0_5"].append(
                {"message": entry["message"][:200], "category": category, "confidence": confidence}
            )
    return report


def render(report: dict[str, Any], show_misses: bool) -> str:
    head = f"== {report['set']} ({report.get('mode', 'message level')}): {report['failures']} failures"
    if "benign_lines" in report:
        head += f", {report['benign_lines']} benign lines"
    top1 = report["top1_at_0_5"] or 0.0
    kind = report["right_kind"] or 0.0
    out = [
        head,
        f"top-1 at confidence >= 0.5: {top1:.1%}",
        f"right kind (software/data/infrastructure/performance): {kind:.1%}",
    ]
    if "benign_at_0_5" in report:
        out.append(f"benign lines at >= 0.5: {len(report['benign_at_0_5'])}")
    out += ["", f"{'category':22} {'n':>4} {'precision':>10} {'recall':>7}"]
    for c, m in report["per_category"].items():
        p = "-" if m["precision"] is None else f"{m['precision']:.2f}"
        r = "-" if m["recall"] is None else f"{m['recall']:.2f}"
        out.append(f"{c:22} {m['n']:>4} {p:>10} {r:>7}")
    cols = sorted({p for row in report["confusion"].values() for p in row})
    short = {c: c[:7] for c in cols}
    out += [
        "",
        "confusion (rows: expected, columns: answered at >= 0.5)",
        f"{'':22} " + " ".join(f"{short[c]:>7}" for c in cols),
    ]
    for expected, row in report["confusion"].items():
        out.append(f"{expected:22} " + " ".join(f"{row.get(c, 0) or '.':>7}" for c in cols))
    out += ["", "calibration (top-1 answers by confidence: how many, how many right)"]
    out += [f"  {c['confidence']:12} {c['n']:>4}  {c['right']:.0%}" for c in report["calibration"]]
    for b in report.get("benign_at_0_5", []):
        out.append(f"benign line at {b['confidence']}: {b['category']}: {b['message']}")
    if show_misses:
        out += ["", "misses:"] + [
            f"  {m['expected']} -> {m['category']} {m['confidence']}  {m['source']}" for m in report["misses"]
        ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.diagnose.corpus.score", description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, action="append", help="score only this set (repeatable)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--misses", action="store_true", help="list the entries answered wrong (dev only: never tune on held-out)"
    )
    args = parser.parse_args(argv)
    reports = [score_set(name) for name in (args.set or SETS)]
    if args.format == "json":
        print(json.dumps({r["set"]: r for r in reports}, indent=2))
    else:
        print("\n\n".join(render(r, args.misses and r["set"] == "dev") for r in reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
