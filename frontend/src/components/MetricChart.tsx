// One metric as a chart: the server downsamples it into buckets (min, max, mean per bucket, so
// a 1,000,000-point metric draws as fast as a small one and its spikes survive). One run draws
// its mean line in the min-max envelope; several runs (compare) overlay their lines.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, num, pathSegments } from "../api";
import { fmtNum, fmtTick } from "../format";
import { colorOf } from "../theme";
import type { Buckets } from "../types";
import { Chart, envelope, fmtSlog, HUGE, hover, markers, padSingle, slog, uPlot, xAxis, yAxis, type XKind } from "./Chart";
import { ErrorBox, Spinner } from "./ui";

export interface Series {
  id: string;
  label: string;
  start: number | null; // the run's start (ms), for relative time
  color?: string;
}

export interface MetricChartProps {
  name: string;
  runs: Series[];
  x: XKind;
  smooth: number;
  log: boolean;
  zoom: [number, number] | null;
  onZoom: (z: [number, number] | null) => void;
  refresh?: number;
  buckets?: number;
  height?: number;
  syncKey?: string;
}

interface Prepared {
  x: number[];
  y: (number | null)[];
  raw: (number | null)[];
  lo: (number | null)[];
  hi: (number | null)[];
  b: Buckets;
  order: number[];
}

function ema(values: (number | null)[], w: number): (number | null)[] {
  if (w <= 0) return values;
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v === null) return null;
    last = last * w + (1 - w) * v;
    n++;
    return last / (1 - Math.pow(w, n));
  });
}

/** Whether any value reaches HUGE: then the chart draws `slog` of the values (uPlot can label
 *  no linear or log axis past 1e17, and a linear one would flatten everything else anyway). */
function reachesHuge(ps: (Prepared | null)[]): boolean {
  return ps.some((p) => p && [p.raw, p.lo, p.hi].some((vs) => vs.some((v) => v !== null && Math.abs(v) >= HUGE)));
}

function toMagnitude(p: Prepared): Prepared {
  const f = (vs: (number | null)[]) => vs.map((v) => (v === null ? null : slog(v)));
  return { ...p, raw: f(p.raw), y: f(p.y), lo: f(p.lo), hi: f(p.hi) };
}

function smoothedText(v: number | null | undefined, magnitude: boolean): string {
  return v === null || v === undefined ? "—" : magnitude ? `≈${fmtSlog(v)}` : fmtNum(v);
}

/** Points drawn on their own: a series with a single value has no line to draw. */
function lonely(vs: (number | null)[]): boolean {
  let n = 0;
  for (const v of vs) if (v !== null && ++n > 1) return false;
  return n === 1;
}

/** The points of a series with a single value, drawn large enough to see; undefined otherwise. */
function loneDot(p: Prepared | null | undefined, color: string): uPlot.Series.Points | undefined {
  return p && lonely(p.y) ? { show: true, size: 8, fill: color } : undefined;
}

function prepare(b: Buckets, s: Series, x: XKind, smooth: number, log: boolean): Prepared {
  const n = b.step.length;
  const xs = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    if (x === "step") xs[i] = b.step[i];
    else {
      const t = Date.parse(b.time[i]) / 1000;
      xs[i] = x === "time" ? t : t - (s.start ?? 0) / 1000;
    }
  }
  let order = [...Array(n).keys()];
  for (let i = 1; i < n; i++) {
    if (xs[i] < xs[i - 1]) {
      order.sort((a, c) => xs[a] - xs[c]);
      break;
    }
  }
  const pos = (v: number | null) => (log && v !== null && v <= 0 ? null : v);
  const raw = order.map((i) => pos(num(b.mean[i]) ?? (b.count[i] === 1 ? num(b.first[i]) : null)));
  return {
    x: order.map((i) => xs[i]),
    raw,
    y: ema(raw, smooth),
    lo: order.map((i) => pos(num(b.min[i]))),
    hi: order.map((i) => pos(num(b.max[i]))),
    b,
    order,
  };
}

export function MetricChart(props: MetricChartProps) {
  const { name, runs, x, smooth, log, zoom } = props;
  const nb = props.buckets ?? (runs.length > 1 ? 500 : 1000);
  const stepZoom = x === "step" && zoom ? zoom : null;
  const [data, setData] = useState<(Buckets | null)[] | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const readout = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const ctrl = new AbortController();
    Promise.all(runs.map((r) =>
      get<Buckets>(`runs/${encodeURIComponent(r.id)}/metrics/${pathSegments(name)}`, {
        buckets: nb,
        from_step: stepZoom ? Math.floor(stepZoom[0]) : undefined,
        to_step: stepZoom ? Math.ceil(stepZoom[1]) : undefined,
      }, ctrl.signal).catch((err: Error) => {
        if (err.name === "AbortError") throw err;
        return runs.length > 1 && /not_found|404/.test(String((err as { code?: string }).code ?? err.message)) ? null : Promise.reject(err);
      }),
    )).then((d) => {
      setData(d);
      setError(null);
    }, (err: Error) => err.name !== "AbortError" && setError(err));
    return () => ctrl.abort();
  }, [name, runs.map((r) => r.id).join(","), stepZoom?.[0], stepZoom?.[1], props.refresh, nb]);

  const [prepared, magnitude] = useMemo((): [(Prepared | null)[] | null, boolean] => {
    const ps = data?.map((b, i) => (b ? prepare(b, runs[i], x, smooth, log) : null)) ?? null;
    if (!ps || !reachesHuge(ps)) return [ps, false];
    return [ps.map((p) => (p ? toMagnitude(p) : null)), true];
  }, [data, x, smooth, log]);
  const single = runs.length === 1;
  const aligned: uPlot.AlignedData | null = useMemo(() => {
    if (!prepared) return null;
    if (single) {
      const p = prepared[0];
      if (!p) return null;
      return smooth > 0 ? [p.x, p.raw, p.y] : [p.x, p.y];
    }
    const tables = prepared.filter((p): p is Prepared => !!p).map((p) => [p.x, p.y] as uPlot.AlignedData);
    if (!tables.length) return null;
    return uPlot.join(tables);
  }, [prepared]);

  const ref = useRef({ prepared, magnitude, zoom, onZoom: props.onZoom });
  ref.current = { prepared, magnitude, zoom, onZoom: props.onZoom };

  const points = data?.reduce((a, b) => a + (b?.points ?? 0), 0) ?? 0;
  const nonfinite = data?.reduce((a, b) => a + (b ? b.nonfinite.reduce((s, v) => s + v, 0) : 0), 0) ?? 0;
  const present = prepared ? runs.filter((_, i) => prepared[i]) : runs;

  const build = (width: number): uPlot.Options => {
    const series: uPlot.Series[] = [{ label: x === "step" ? "step" : "time" }];
    if (single) {
      const c = runs[0].color ?? colorOf(0);
      if (smooth > 0) series.push({ label: name + " (raw)", stroke: c, width: 1, alpha: 0.3, spanGaps: false, points: { show: false } });
      series.push({ label: name, stroke: c, width: 1.6, spanGaps: false, points: loneDot(prepared?.[0], c) });
    } else {
      present.forEach((r) => {
        const idx = runs.indexOf(r);
        const color = r.color ?? colorOf(idx);
        series.push({ label: r.label, stroke: color, width: 1.6, spanGaps: true, points: loneDot(prepared?.[idx], color) ?? { show: false } });
      });
    }
    const plugins: uPlot.Plugin[] = [
      hover((u, idx) => {
        const el = readout.current;
        const p = ref.current.prepared?.[0];
        if (!el) return;
        if (idx === null || !single || !p) {
          el.textContent = "";
          return;
        }
        const i = p.order[idx];
        const b = p.b;
        if (i === undefined) return;
        const span = b.step[i] === b.step_end[i] ? `step ${b.step[i]}` : `steps ${b.step[i]}–${b.step_end[i]}`;
        const extra = b.count[i] > 1 ? ` · min ${fmtNum(b.min[i])} (step ${b.min_step[i]}) · max ${fmtNum(b.max[i])} (step ${b.max_step[i]}) · ${b.count[i]} points` : "";
        const bad = b.nonfinite[i] ? ` · ${b.nonfinite[i]} NaN/inf` : "";
        el.textContent = `${span} · ${b.count[i] > 1 ? "mean" : "value"} ${fmtNum(b.count[i] > 1 ? b.mean[i] : b.first[i])}${smooth > 0 ? ` · smoothed ${smoothedText(u.data[2]?.[idx] ?? null, ref.current.magnitude)}` : ""}${extra}${bad}`;
      }),
    ];
    if (single) {
      plugins.push(envelope(() => {
        const p = ref.current.prepared?.[0];
        return p ? { x: p.x, lo: p.lo, hi: p.hi, color: runs[0].color ?? colorOf(0) } : null;
      }));
      plugins.push(markers(() => {
        const p = ref.current.prepared?.[0];
        return p ? p.order.map((i, k) => (p.b.nonfinite[i] ? p.x[k] : NaN)).filter((v) => !Number.isNaN(v)) : [];
      }));
    }
    return {
      width,
      height: props.height ?? 220,
      series,
      legend: { show: !single, live: true },
      cursor: {
        drag: { x: true, y: false, setScale: false },
        sync: props.syncKey ? { key: props.syncKey } : undefined,
        bind: { dblclick: () => () => { ref.current.onZoom(null); return null; } },
      },
      scales: {
        x: { time: x === "time", range: zoom ? () => [zoom[0], zoom[1]] : padSingle },
        y: log && !magnitude ? { distr: 3 } : {},
      },
      axes: [xAxis(x), yAxis(magnitude ? fmtSlog : fmtTick)],
      plugins,
      hooks: {
        setSelect: [(u: uPlot) => {
          if (u.select.width < 3) return;
          const lo = u.posToVal(u.select.left, "x");
          const hi = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          if (hi > lo) ref.current.onZoom([lo, hi]);
        }],
      },
    };
  };

  return (
    <div class="metric-chart" data-metric={name}>
      <div class="metric-head">
        <h3 class="metric-name" title={name}>{name}</h3>
        <span class="muted small">
          {points ? `${points.toLocaleString()} point${points === 1 ? "" : "s"}` : ""}
          {nonfinite ? <span class="text-danger"> · {nonfinite} NaN/inf</span> : null}
        </span>
        {magnitude ? <span class="chip" title="Values reach 1e15 or more: the y axis is logarithmic (sign kept), or nothing else would show">log scale (huge values)</span> : null}
        {!data && !error ? <Spinner /> : null}
      </div>
      {error ? <ErrorBox error={error} what={name} /> : null}
      {aligned && aligned[0].length ? (
        <Chart label={`chart of ${name}`} data={aligned} build={build}
          rebuildKey={`${x}|${log}|${magnitude}|${smooth > 0}|${present.map((r) => r.id).join(",")}|${zoom?.join(",") ?? ""}|${single}`} />
      ) : data && !error ? <div class="chart-empty muted">No points{zoom ? " in this range" : ""}.</div> : <div class="chart-placeholder" />}
      <div class="readout small mono" ref={readout} aria-live="off" />
    </div>
  );
}
