// Two plots of params against a metric over a set of runs (a sweep's trials, or any filter):
// parallel coordinates (one axis per param, the metric last, one line per run) and a scatter
// of one param against the metric. Plain SVG: a few hundred runs at most, nothing to stream.
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { num } from "../api";
import { fmtNum, fmtTick, fmtValue, shortId } from "../format";
import type { Run } from "../types";

export interface Axis {
  key: string; // "params.lr" or "metrics.val_loss"
  label: string;
  kind: "number" | "category";
  log: boolean;
  min: number;
  max: number;
  categories: string[];
}

/** The value of a run on an axis key, as a number or a category text (null when missing). */
function valueOf(run: Run, key: string): number | string | null {
  const [kind, ...rest] = key.split(".");
  const name = rest.join(".");
  const raw = kind === "metrics" ? run.metrics[name] : run.params[name];
  if (raw === undefined || raw === null) return null;
  if (kind === "metrics") return num(raw);
  if (typeof raw === "number") return Number.isFinite(raw) ? raw : null;
  return fmtValue(raw);
}

export function makeAxis(runs: Run[], key: string): Axis | null {
  const values = runs.map((r) => valueOf(r, key)).filter((v): v is number | string => v !== null);
  if (!values.length) return null;
  const label = key.replace(/^(params|metrics)\./, "");
  if (values.every((v) => typeof v === "number")) {
    const nums = values as number[];
    const min = Math.min(...nums);
    const max = Math.max(...nums);
    const log = min > 0 && max / min >= 100;
    return { key, label, kind: "number", log, min, max, categories: [] };
  }
  const categories = [...new Set(values.map(String))].sort();
  return { key, label, kind: "category", log: false, min: 0, max: Math.max(1, categories.length - 1), categories };
}

/** 0 (bottom) .. 1 (top) along an axis, or null when the run has no value there. */
function position(axis: Axis, run: Run): number | null {
  const v = valueOf(run, axis.key);
  if (v === null) return null;
  if (axis.kind === "category") {
    const i = axis.categories.indexOf(String(v));
    return axis.categories.length > 1 ? i / (axis.categories.length - 1) : 0.5;
  }
  if (typeof v !== "number") return null;
  if (axis.max === axis.min) return 0.5;
  if (axis.log) return (Math.log(v) - Math.log(axis.min)) / (Math.log(axis.max) - Math.log(axis.min));
  return (v - axis.min) / (axis.max - axis.min);
}

/** Blue (best) to red (worst) by the metric's position, for minimize; reversed for maximize. */
function colour(t: number | null, goal: "minimize" | "maximize"): string {
  if (t === null) return "var(--fg-muted)";
  const x = goal === "minimize" ? t : 1 - t;
  const hue = 220 - 220 * x;
  return `hsl(${hue.toFixed(0)}, 75%, 48%)`;
}

function ticks(axis: Axis): [number, string][] {
  if (axis.kind === "category") return axis.categories.map((c, i) => [axis.categories.length > 1 ? i / (axis.categories.length - 1) : 0.5, c]);
  if (axis.min === axis.max) return [[0.5, fmtTick(axis.min)]];
  return [[0, fmtTick(axis.min)], [0.5, fmtTick(axis.log ? Math.sqrt(axis.min * axis.max) : (axis.min + axis.max) / 2)], [1, fmtTick(axis.max)]];
}

/** A line's or a dot's tooltip: the run, its x value (the scatter's), its metric. */
function tip(r: Run, metric: Axis, x?: Axis): string {
  const at = x ? `${x.label} = ${String(valueOf(r, x.key))}, ` : "";
  return `${r.name ?? shortId(r.id)}: ${at}${metric.label} = ${fmtNum(valueOf(r, metric.key))}`;
}

const W = 960;
const H = 340;
const PAD = { top: 28, bottom: 28, left: 60, right: 60 };

export function ParallelCoordinates({ runs, axes, metric, goal, onPick }: {
  runs: Run[]; axes: Axis[]; metric: Axis; goal: "minimize" | "maximize"; onPick?: (run: Run) => void;
}): JSX.Element {
  const [hover, setHover] = useState<string | null>(null);
  const all = [...axes, metric];
  const step = all.length > 1 ? (W - PAD.left - PAD.right) / (all.length - 1) : 0;
  const x = (i: number) => PAD.left + i * step;
  const y = (t: number) => PAD.top + (1 - t) * (H - PAD.top - PAD.bottom);
  return (
    <svg class="sweep-plot parcoords" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`parallel coordinates of ${runs.length} runs`}
      data-runs={runs.length} data-axes={all.map((a) => a.label).join(",")}>
      {runs.map((r) => {
        const points = all.map((a, i) => {
          const t = position(a, r);
          return t === null ? null : `${x(i).toFixed(1)},${y(t).toFixed(1)}`;
        });
        if (points.some((p) => p === null)) return null;
        const on = hover === r.id;
        return (
          <polyline key={r.id} class={`pc-line ${on ? "on" : ""}`} data-run={r.id} points={points.join(" ")}
            stroke={colour(position(metric, r), goal)} onMouseEnter={() => setHover(r.id)} onMouseLeave={() => setHover(null)}
            onClick={() => onPick?.(r)}>
            <title>{tip(r, metric)}</title>
          </polyline>
        );
      })}
      {all.map((a, i) => (
        <g key={a.key} class="pc-axis" data-axis={a.label}>
          <line x1={x(i)} x2={x(i)} y1={y(0)} y2={y(1)} />
          <text class="pc-label" x={x(i)} y={PAD.top - 10} text-anchor="middle">{a.label}{a.log ? " (log)" : ""}</text>
          {ticks(a).map(([t, text]) => (
            <text key={text} class="pc-tick" x={x(i) - 6} y={y(t) + 4} text-anchor="end">{text}</text>
          ))}
        </g>
      ))}
    </svg>
  );
}

export function Scatter({ runs, xAxis, metric, goal, onPick }: {
  runs: Run[]; xAxis: Axis; metric: Axis; goal: "minimize" | "maximize"; onPick?: (run: Run) => void;
}): JSX.Element {
  const w = 640;
  const h = 340;
  const pad = { top: 16, bottom: 40, left: 70, right: 20 };
  // points stay off the axes: 4% inset at both ends
  const px = (t: number) => pad.left + (0.04 + 0.92 * t) * (w - pad.left - pad.right);
  const py = (t: number) => pad.top + (1 - (0.04 + 0.92 * t)) * (h - pad.top - pad.bottom);
  const dots = runs.map((r) => ({ r, tx: position(xAxis, r), ty: position(metric, r) }))
    .filter((d): d is { r: Run; tx: number; ty: number } => d.tx !== null && d.ty !== null);
  return (
    <svg class="sweep-plot scatter" viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`${metric.label} against ${xAxis.label}`}
      data-points={dots.length}>
      <line class="sc-axis" x1={pad.left} x2={w - pad.right} y1={h - pad.bottom} y2={h - pad.bottom} />
      <line class="sc-axis" x1={pad.left} x2={pad.left} y1={h - pad.bottom} y2={pad.top} />
      {ticks(xAxis).map(([t, text]) => <text key={`x${text}`} class="pc-tick" x={px(t)} y={h - pad.bottom + 16} text-anchor="middle">{text}</text>)}
      {ticks(metric).map(([t, text]) => <text key={`y${text}`} class="pc-tick" x={pad.left - 6} y={py(t) + 4} text-anchor="end">{text}</text>)}
      <text class="pc-label" x={(px(0) + px(1)) / 2} y={h - 6} text-anchor="middle">{xAxis.label}{xAxis.log ? " (log)" : ""}</text>
      <text class="pc-label" x={14} y={(py(0) + py(1)) / 2} text-anchor="middle" transform={`rotate(-90 14 ${(py(0) + py(1)) / 2})`}>
        {metric.label}
      </text>
      {dots.map(({ r, tx, ty }) => (
        <circle key={r.id} class="sc-dot" data-run={r.id} cx={px(tx)} cy={py(ty)} r={5} fill={colour(ty, goal)} onClick={() => onPick?.(r)}>
          <title>{tip(r, metric, xAxis)}</title>
        </circle>
      ))}
    </svg>
  );
}
