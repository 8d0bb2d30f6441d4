"""The drift report as one self-contained HTML file with inline SVG plots.

Why hand-made SVG: the report is an artifact that must open anywhere, years later, offline —
no JavaScript, no CDN, no plotting library. Every string that came from the data (column
names, category values, source paths) is HTML-escaped, so a category called
``<script>`` stays text.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from flightlog.data.driftcheck import DriftReport
from flightlog.data.profiling import ColumnProfile, Profile
from flightlog.data.stats import CategoricalStats, NumericStats
from flightlog.timefmt import iso

__all__ = ["render_drift_html"]

_REF = "#4c78a8"
_CUR = "#f58518"
_W, _H, _PAD = 640, 180, 36
_MAX_CATEGORIES = 12


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    return f"{x:.4g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def _mass(s: NumericStats, edges: np.ndarray) -> np.ndarray:
    if s.values:
        v, w = np.asarray(s.values), np.ones(len(s.values))
    else:
        v, c = s.sketch.points()
        w = c.astype(np.float64)
    idx = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, edges.size - 2)
    counts = np.bincount(idx, weights=w, minlength=edges.size - 1)
    total = counts.sum()
    return counts / total if total else counts


def _numeric_svg(r: NumericStats, c: NumericStats, bins: int = 30) -> str:
    lows = [q for q in (r.sketch.quantiles([0.01])[0], c.sketch.quantiles([0.01])[0]) if q is not None]
    highs = [q for q in (r.sketch.quantiles([0.99])[0], c.sketch.quantiles([0.99])[0]) if q is not None]
    if r.values and c.values:
        lows = [min(r.values), min(c.values)]
        highs = [max(r.values), max(c.values)]
    if not lows or not highs:
        return "<p class=muted>no values to plot</p>"
    lo, hi = min(lows), max(highs)
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    edges = np.linspace(lo, hi, bins + 1)
    pr, pc = _mass(r, edges), _mass(c, edges)
    top = float(max(pr.max(initial=0), pc.max(initial=0))) or 1.0
    inner_w, inner_h = _W - 2 * _PAD, _H - 2 * _PAD
    bw = inner_w / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img">']
    for shares, color in ((pr, _REF), (pc, _CUR)):
        for i, share in enumerate(shares):
            h = inner_h * float(share) / top
            if h <= 0:
                continue
            x = _PAD + i * bw
            parts.append(
                f'<rect x="{x:.1f}" y="{_PAD + inner_h - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                f'fill="{color}" fill-opacity="0.55"><title>{_e(_num(edges[i]))} – {_e(_num(edges[i + 1]))}: '
                f"{share:.1%}</title></rect>"
            )
    parts.append(_axis(lo, hi, inner_w, inner_h))
    parts.append("</svg>")
    return "".join(parts)


def _axis(lo: float, hi: float, inner_w: float, inner_h: float) -> str:
    y = _PAD + inner_h
    out = [f'<line x1="{_PAD}" y1="{y}" x2="{_PAD + inner_w}" y2="{y}" stroke="#888"/>']
    for frac in (0.0, 0.5, 1.0):
        x = _PAD + frac * inner_w
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        out.append(
            f'<text x="{x:.1f}" y="{y + 16}" font-size="11" text-anchor="{anchor}">{_e(_num(lo + frac * (hi - lo)))}</text>'
        )
    return "".join(out)


def _categorical_svg(r: CategoricalStats, c: CategoricalStats) -> str:
    rt, ct = r.count or 1, c.count or 1
    keys = list(dict.fromkeys([*r.counts, *c.counts]))
    keys.sort(key=lambda k: -max(r.counts.get(k, 0) / rt, c.counts.get(k, 0) / ct))
    shown = keys[:_MAX_CATEGORIES]
    rows = [(str(k), r.counts.get(k, 0) / rt, c.counts.get(k, 0) / ct) for k in shown]
    rest_r = 1 - sum(x[1] for x in rows)
    rest_c = 1 - sum(x[2] for x in rows)
    if rest_r > 1e-9 or rest_c > 1e-9:
        rows.append(("(other)", max(rest_r, 0.0), max(rest_c, 0.0)))
    label_w, row_h = 170, 26
    height = row_h * len(rows) + 10
    top = max(max(x[1], x[2]) for x in rows) or 1.0
    inner = _W - label_w - 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" viewBox="0 0 {_W} {height}" role="img">'
    ]
    for i, (label, a, b) in enumerate(rows):
        y = 5 + i * row_h
        text = label if len(label) <= 24 else label[:23] + "…"
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" font-size="11" text-anchor="end">{_e(text)}<title>{_e(label)}</title></text>'
        )
        for j, (share, color) in enumerate(((a, _REF), (b, _CUR))):
            w = inner * share / top
            parts.append(
                f'<rect x="{label_w}" y="{y + j * 11}" width="{w:.1f}" height="10" fill="{color}">'
                f"<title>{'reference' if j == 0 else 'current'}: {share:.1%}</title></rect>"
            )
        parts.append(f'<text x="{label_w + inner + 6}" y="{y + 15}" font-size="10">{a:.0%} → {b:.0%}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _plot(rc: ColumnProfile | None, cc: ColumnProfile | None) -> str:
    if rc is None or cc is None:
        return ""
    if rc.numeric is not None and cc.numeric is not None:
        return _numeric_svg(rc.numeric, cc.numeric)
    if rc.categorical is not None and cc.categorical is not None:
        return _categorical_svg(rc.categorical, cc.categorical)
    return ""


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:60rem;color:#222;padding:0 1rem}
h1{font-size:1.5rem} h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;font-size:.9rem} th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd}
.drift{color:#b00020;font-weight:600} .ok{color:#1b7f3b} .muted{color:#777}
.legend span{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 1rem;vertical-align:middle}
.verdict{font-size:1.1rem;padding:.6rem 1rem;border-radius:.4rem;background:#f4f4f4}
"""


def render_drift_html(
    report: DriftReport, reference: Profile, current: Profile, *, title: str = "Data drift report"
) -> str:
    """The whole report: verdict, per-column table, schema changes, per-column plots."""
    d = report.to_dict()
    verdict = (
        f'<span class="drift">Dataset drift</span>: {d["drift_share"]:.0%} of columns drifted'
        if d["dataset_drift"]
        else f'<span class="ok">No dataset drift</span>: {d["drift_share"]:.0%} of columns drifted'
    )
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">reference: {_e(reference.source or "–")} ({reference.row_count:,} rows, profiled {_e(iso(reference.created))})<br>'
        f"current: {_e(current.source or '–')} ({current.row_count:,} rows, profiled {_e(iso(current.created))})</p>",
        f'<p class="verdict">{verdict} (threshold {d["drift_share_threshold"]:.0%})</p>',
        '<p class="legend"><span style="background:'
        + _REF
        + '"></span>reference<span style="background:'
        + _CUR
        + '"></span>current</p>',
        "<table><tr><th>column</th><th>type</th><th>test</th><th>statistic</th><th>p-value</th><th>threshold</th><th>PSI</th><th>drift</th></tr>",
    ]
    for c in d["columns"]:
        cls = "drift" if c["drifted"] else "ok"
        out.append(
            f'<tr><td><a href="#col-{_e(c["column"])}">{_e(c["column"])}</a></td><td>{_e(c["type"])}</td><td>{_e(c["test"])}</td>'
            f"<td>{_num(c['statistic'])}</td><td>{_num(c['p_value'])}</td><td>{_num(c['threshold'])}</td>"
            f'<td>{_num(c["psi"])}</td><td class="{cls}">{"yes" if c["drifted"] else "no"}</td></tr>'
        )
    out.append("</table>")
    if d["schema_changes"]:
        out.append(
            "<h2>Schema changes</h2><table><tr><th>column</th><th>change</th><th>reference</th><th>current</th></tr>"
        )
        for s in d["schema_changes"]:
            out.append(
                f"<tr><td>{_e(s['column'])}</td><td>{_e(s['change'])}</td><td>{_e(s['reference'] or '–')}</td>"
                f"<td>{_e(s['current'] or '–')}</td></tr>"
            )
        out.append("</table>")
    for c in d["columns"]:
        name = c["column"]
        cls = "drift" if c["drifted"] else "ok"
        out.append(
            f'<h2 id="col-{_e(name)}">{_e(name)} <span class="{cls}">{"drifted" if c["drifted"] else "stable"}</span></h2>'
        )
        out.append(_plot(reference.columns.get(name), current.columns.get(name)))
    out.append("</body></html>")
    return "\n".join(out)
