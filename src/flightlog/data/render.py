"""Human output of the data commands: rich tables on stdout.

Values that came from data are passed through :func:`flightlog.cli.output.esc`, so a category
named ``[bold]`` prints as itself and an escape sequence in a value is shown, not obeyed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

from rich.console import Console
from rich.table import Table

from flightlog.cli.output import console, esc
from flightlog.timefmt import format_size

if TYPE_CHECKING:  # profiling needs the data extra; manifests and diffs do not
    from flightlog.data.profiling import Profile

__all__ = [
    "show_manifest",
    "show_diff",
    "show_profile",
    "show_validation",
    "show_drift",
    "show_cohorts",
]


def _console() -> Console:
    return cast(Console, console())  # the CLI's console: piped output is 200 columns, unpadded


def _n(x: Any, digits: int = 4) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "NaN"
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e7):
            return f"{x:.{digits - 1}e}"
        return f"{x:.{digits}g}"
    return esc(x)


def _bar(count: int, top: int, width: int = 30) -> str:
    return "█" * max(1 if count else 0, round(width * count / top)) if top else ""


def show_manifest(m: dict[str, Any]) -> None:
    con = _console()
    con.print(f"[bold]{esc(m['path'])}[/] ({m['kind']})")
    con.print(
        f"{m['file_count']:,} files, {format_size(m['total_size'])}, median {format_size(m.get('median_size'))}"
        f" · digest {m['digest']}"
    )
    if m.get("skipped"):
        con.print(f"[yellow]{m['skipped']:,} entries skipped (unreadable or dangling links)[/]")
    ext = Table("extension", "files", title="extensions", title_justify="left")
    for e, n in list(m["extensions"].items())[:20]:
        ext.add_row(esc(e), f"{n:,}")
    con.print(ext)
    hist = m.get("size_histogram") or []
    top = max((h["count"] for h in hist), default=0)
    t = Table("size ≤", "files", "", title="size histogram", title_justify="left")
    for h in hist:
        t.add_row(format_size(h["le"]), f"{h['count']:,}", _bar(h["count"], top))
    con.print(t)


def show_diff(d: dict[str, Any], limit: int = 20) -> None:
    con = _console()
    c = d["counts"]
    head = "[green]identical[/]" if d["identical"] else "[yellow]different[/]"
    con.print(
        f"{head}: {c['added']:,} added, {c['removed']:,} removed, {c['changed']:,} changed, {c['unchanged']:,} unchanged"
    )
    t = Table("", "A", "B", "change")
    for key in ("file_count", "total_size", "median_size"):
        v = d[key]
        fmt = (lambda x: f"{x:,}") if key == "file_count" else format_size
        ratio = f"×{v['ratio']:.3g}" if v["ratio"] is not None else "–"
        t.add_row(
            key.replace("_", " "),
            fmt(v["a"]) if v["a"] is not None else "–",
            fmt(v["b"]) if v["b"] is not None else "–",
            ratio,
        )
    con.print(t)
    if d["shifts"]:
        con.print("[bold]shifts[/]")
        for s in d["shifts"]:
            con.print(f"  • {esc(s)}")
    hist = d["size_histogram"]
    if hist and not d["identical"]:
        top = max(max(h["a"], h["b"]) for h in hist) or 1
        h = Table("size ≤", "A", "B", "", title="size histogram", title_justify="left")
        for row in hist:
            if not (row["a"] or row["b"]):
                continue
            h.add_row(format_size(row["le"]), f"{row['a']:,}", f"{row['b']:,}", _bar(row["b"], top, 20))
        con.print(h)
    for key, title in (("added", "added"), ("removed", "removed"), ("changed", "changed")):
        rows = d[key]
        if not rows:
            continue
        t = Table("path", "size", title=f"{title} ({len(rows):,})", title_justify="left")
        for r in rows[:limit]:
            size = (
                f"{format_size(r['size_a'])} → {format_size(r['size_b'])}"
                if key == "changed"
                else format_size(r["size"])
            )
            t.add_row(esc(r["path"]), size)
        if len(rows) > limit:
            t.add_row(f"… {len(rows) - limit:,} more (--format json lists all)", "")
        con.print(t)


def show_profile(p: Profile) -> None:
    con = _console()
    con.print(f"[bold]{esc(p.source or '–')}[/]: {p.row_count:,} rows, {len(p):,} columns")
    t = Table("column", "type", "nulls", "mean", "std", "min", "p50", "max", "distinct / top values")
    for c in p:
        nulls = f"{c.null_count:,} ({c.null_share:.1%})" if c.null_count else "0"
        if c.numeric is not None and c.numeric.count:
            s = c.numeric
            q = s.quantiles((0.5,))
            t.add_row(
                esc(c.name),
                c.type,
                nulls,
                _n(s.mean),
                _n(s.std),
                _n(s.min),
                _n(q["p50"]),
                _n(s.max),
                "",
            )
        elif c.categorical is not None and c.categorical.count:
            s2 = c.categorical
            top = ", ".join(f"{esc(v['value'])[:24]} ({v['share']:.0%})" for v in s2.top(3))
            approx = "" if s2.exact else "≈"
            t.add_row(
                esc(c.name),
                c.type,
                nulls,
                "",
                "",
                "",
                "",
                "",
                f"{approx}{s2.cardinality:,}: {top}",
            )
        elif c.datetime is not None and c.datetime.count:
            d = c.datetime.to_dict()
            t.add_row(esc(c.name), c.type, nulls, "", "", d["min"], "", d["max"], "")
        else:
            t.add_row(esc(c.name), c.type, nulls, "", "", "", "", "", "")
    con.print(t)


def show_validation(v: dict[str, Any]) -> None:
    con = _console()
    t = Table("", "expectation", "column", "expected", "observed", "examples")
    for r in v["results"]:
        mark = "[green]✓[/]" if r["success"] else "[red]✗[/]"
        ex = ", ".join(
            f"row {e['row']}: {esc(repr(e['value']) if not isinstance(e['value'], str) else e['value'])[:40]}"
            for e in r["examples"][:3]
        )
        t.add_row(
            mark,
            esc(r["expectation"]),
            esc(r["column"] or ""),
            esc(r["expected"]),
            esc(r["observed"]),
            ex,
        )
    con.print(t)
    verdict = "[green]passed[/]" if v["success"] else "[red]FAILED[/]"
    con.print(
        f"{verdict}: {v['passed']} of {v['evaluated']} expectations met on {esc(v['source'])} ({v['row_count']:,} rows)"
    )


def show_drift(d: dict[str, Any]) -> None:
    con = _console()
    t = Table("column", "type", "test", "statistic", "p-value", "threshold", "PSI", "drift")
    for c in d["columns"]:
        t.add_row(
            esc(c["column"]),
            c["type"],
            c["test"],
            _n(c["statistic"]),
            _n(c["p_value"]),
            _n(c["threshold"]),
            _n(c["psi"]),
            "[red]yes[/]" if c["drifted"] else "[green]no[/]",
        )
    con.print(t)
    for s in d["schema_changes"]:
        con.print(
            f"[yellow]schema[/] {esc(s['column'])}: {s['change']} "
            f"({esc(s['reference'] or '–')} → {esc(s['current'] or '–')})"
        )
    verdict = "[red]dataset drift[/]" if d["dataset_drift"] else "[green]no dataset drift[/]"
    con.print(f"{verdict}: {d['drift_share']:.0%} of columns drifted (threshold {d['drift_share_threshold']:.0%})")


def _test_cell(test: dict[str, Any] | None) -> str:
    """``p=0.003 ✓`` (significant, adjusted p-value) or ``p=0.41 chance?``; ``–`` untested."""
    if not test:
        return "–"
    p = test.get("p_adjusted") if test.get("p_adjusted") is not None else test.get("p_value")
    how = "2 props" if test.get("method") == "two_proportions" else "bootstrap"
    return f"[red]{how} p={p:.2g}[/]" if test.get("significant") else f"[dim]{how} p={p:.2g} (chance?)[/]"


def show_cohorts(c: dict[str, Any]) -> None:
    con = _console()
    t = Table("metric", "baseline", "current", "delta", "", title="aggregate", title_justify="left")
    for a in c["aggregate"]:
        colour = {"improved": "green", "regressed": "red"}.get(a["change"], "white")
        t.add_row(
            esc(a["metric"]),
            _n(a["baseline"]),
            _n(a["current"]),
            _n(a["delta"]),
            f"[{colour}]{a['change']}[/]",
        )
    con.print(t)
    if c["regressions"]:
        r = Table(
            "cohort",
            "value",
            "metric",
            "baseline",
            "current",
            "delta",
            "rows",
            "test",
            title="regressed cohorts",
            title_justify="left",
        )
        for x in c["regressions"]:
            r.add_row(
                esc(x["cohort"]),
                esc(x["value"]),
                esc(x["metric"]),
                _n(x["baseline"]),
                _n(x["current"]),
                _n(x["delta"]),
                f"{x['count']:,} vs {x.get('baseline_count', 0):,}",
                _test_cell(x.get("test")),
            )
        con.print(r)
    cohorts = len({(x["cohort"], str(x["value"])) for x in c["regressions"]})
    what = f"{cohorts} cohort{'s' if cohorts != 1 else ''} regressed ({len(c['regressions'])} metrics"
    if "significant_regressions" in c:
        what += f", {c['significant_regressions']} significant"
    what += ")"
    if c["hidden_regression"]:
        con.print(f"[red]{what} while the aggregate did not[/]")
    elif c["regressions"]:
        con.print(f"[red]{what}, along with the aggregate[/]")
    else:
        con.print(
            f"[green]no cohort regressed by {c['threshold']:g} or more[/] ({c['cohorts_compared']} cohorts compared)"
        )
