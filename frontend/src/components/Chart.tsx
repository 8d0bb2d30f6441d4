// uPlot charts: a thin Preact wrapper plus the plugins flightlog's charts share (min/max bands
// of downsampled metrics, stage bands behind resource charts, markers for non-finite values).
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { fmtDuration, fmtNum, fmtTick } from "../format";
import { cssVar, onTheme } from "../theme";

export type XKind = "step" | "time" | "relative";

export interface ChartProps {
  /** Options for a chart `width` pixels wide; called again when rebuildKey or the theme changes. */
  build: (width: number) => uPlot.Options;
  data: uPlot.AlignedData;
  rebuildKey: string;
  label?: string;
  class?: string;
  onReady?: (u: uPlot | null) => void;
}

export function Chart(props: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const [themeTick, setThemeTick] = useState(0);
  const latest = useRef(props);
  latest.current = props;

  useEffect(() => onTheme(() => setThemeTick((t) => t + 1)), []);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(200, el.clientWidth);
    const u = new uPlot(latest.current.build(width), latest.current.data, el);
    plot.current = u;
    latest.current.onReady?.(u);
    let last = width;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (Math.abs(w - last) >= 2) {
        last = w;
        u.setSize({ width: w, height: u.height });
      }
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      latest.current.onReady?.(null);
      u.destroy();
      plot.current = null;
    };
  }, [props.rebuildKey, themeTick]);

  const firstData = useRef(true);
  useEffect(() => {
    if (firstData.current) {
      firstData.current = false;
      return;
    }
    plot.current?.setData(props.data, true);
  }, [props.data]);

  return <div class={`chart ${props.class ?? ""}`} ref={box} role="img" aria-label={props.label} data-chart={props.label} />;
}

export function themeColors() {
  return {
    fg: cssVar("--fg-muted") || "#666",
    grid: cssVar("--grid") || "rgba(128,128,128,.15)",
    bg: cssVar("--bg") || "#fff",
    danger: cssVar("--danger") || "#dc2626",
  };
}

function labelSize(u: uPlot, values: string[] | null): number {
  if (!values || !values.length) return 40;
  const longest = values.reduce((m, v) => Math.max(m, (v ?? "").length), 0);
  void u;
  return Math.min(120, 26 + longest * 7);
}

export function xAxis(kind: XKind): uPlot.Axis {
  const c = themeColors();
  const axis: uPlot.Axis = { stroke: c.fg, grid: { stroke: c.grid, width: 1 }, ticks: { stroke: c.grid, width: 1 } };
  if (kind === "relative") axis.values = (_u, splits) => splits.map((v) => fmtDuration(v));
  if (kind === "step") axis.values = (_u, splits) => splits.map((v) => fmtTick(v));
  return axis;
}

export function yAxis(format: (v: number) => string = fmtTick): uPlot.Axis {
  const c = themeColors();
  return {
    stroke: c.fg,
    grid: { stroke: c.grid, width: 1 },
    ticks: { stroke: c.grid, width: 1 },
    values: (u, splits) => {
      const labels = splits.map((v) => (v === null || v === undefined ? "" : format(v)));
      // the canvas holds the drawn labels; the page keeps them as text too (tests, assistive tools)
      u.root.dataset.yTicks = labels.join(" | ");
      return labels;
    },
    size: (u, values) => labelSize(u, values),
  };
}

/** Beyond this magnitude uPlot draws no y labels at all (it gives up past 17 integer digits),
 *  so a metric that reaches it is drawn on a log scale of our own (see `magnitude`). */
export const HUGE = 1e15;

/** A signed log10 that keeps 0 and the sign: the y value a `magnitude` chart draws. */
export function slog(v: number): number {
  return Math.sign(v) * Math.log10(1 + Math.abs(v));
}

/** The label of a `slog` tick: about the value it stands for ("1e+195", "-3.2e+20", "100"); from
 *  10 up the "+1" of `slog` is left out, so a whole tick reads as a power of ten. */
export function fmtSlog(t: number): string {
  const a = Math.abs(t);
  const v = Math.sign(t) * (a < 1 ? Math.pow(10, a) - 1 : Math.pow(10, a));
  if (!Number.isFinite(v)) return t > 0 ? "∞" : "-∞";
  if (Math.abs(v) < 1e6) return fmtNum(Number(v.toPrecision(3)));
  return v.toExponential(Math.abs(a - Math.round(a)) < 1e-9 ? 0 : 1);
}

/** An x range with room around a single x value: uPlot would stretch it to [v, v + 100] and put
 *  the lone point on the axis. */
export function padSingle(u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  const xs = u.data[0];
  return xs.length === 1 && typeof xs[0] === "number" ? [xs[0] - 1, xs[0] + 1] : [min, max];
}

export interface Band {
  start: number;
  end: number;
  label: string;
  color: string;
}

/** Stages drawn as translucent bands behind the series, labelled at the top. */
export function stageBands(getBands: () => Band[]): uPlot.Plugin {
  return {
    hooks: {
      drawClear: [(u: uPlot) => {
        const bands = getBands();
        if (!bands.length) return;
        const { ctx } = u;
        const { top, height, left, width } = u.bbox;
        ctx.save();
        ctx.beginPath();
        ctx.rect(left, top, width, height);
        ctx.clip();
        ctx.font = `${Math.round(10 * devicePixelRatio)}px system-ui, sans-serif`;
        ctx.textBaseline = "top";
        for (const b of bands) {
          const x0 = u.valToPos(b.start, "x", true);
          const x1 = u.valToPos(b.end, "x", true);
          if (!Number.isFinite(x0) || !Number.isFinite(x1) || x1 < left || x0 > left + width) continue;
          ctx.globalAlpha = 0.13;
          ctx.fillStyle = b.color;
          ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
          ctx.globalAlpha = 0.8;
          if (x1 - x0 > 30) ctx.fillText(b.label, Math.max(x0, left) + 3, top + 3, x1 - x0 - 6);
        }
        ctx.restore();
      }],
    },
  };
}

/** The min-max envelope of downsampled buckets, so spikes survive a 1,000-bucket chart. */
export function envelope(getData: () => { x: ArrayLike<number>; lo: ArrayLike<number | null>; hi: ArrayLike<number | null>; color: string } | null): uPlot.Plugin {
  return {
    hooks: {
      drawClear: [(u: uPlot) => {
        const d = getData();
        if (!d) return;
        const { ctx } = u;
        const { top, height, left, width } = u.bbox;
        ctx.save();
        ctx.beginPath();
        ctx.rect(left, top, width, height);
        ctx.clip();
        ctx.globalAlpha = 0.22;
        ctx.fillStyle = d.color;
        let seg: [number, number, number][] = [];
        const flush = () => {
          if (seg.length) {
            ctx.beginPath();
            seg.forEach(([x, , y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
            for (let i = seg.length - 1; i >= 0; i--) ctx.lineTo(seg[i][0], seg[i][1]);
            ctx.closePath();
            ctx.fill();
            if (seg.length === 1) ctx.fillRect(seg[0][0] - 1, seg[0][2], 2, Math.max(1, seg[0][1] - seg[0][2]));
          }
          seg = [];
        };
        for (let i = 0; i < d.x.length; i++) {
          const lo = d.lo[i];
          const hi = d.hi[i];
          if (lo === null || hi === null || lo === undefined || hi === undefined) {
            flush();
            continue;
          }
          const x = u.valToPos(d.x[i], "x", true);
          const ylo = u.valToPos(lo, "y", true);
          const yhi = u.valToPos(hi, "y", true);
          if (!Number.isFinite(ylo) || !Number.isFinite(yhi)) {
            flush();
            continue;
          }
          seg.push([x, ylo, yhi]);
        }
        flush();
        ctx.restore();
      }],
    },
  };
}

/** Red ticks at the bottom where a bucket held NaN or infinite values. */
export function markers(getXs: () => number[], title = "non-finite"): uPlot.Plugin {
  return {
    hooks: {
      draw: [(u: uPlot) => {
        const xs = getXs();
        if (!xs.length) return;
        const { ctx } = u;
        const { top, height } = u.bbox;
        const s = 5 * devicePixelRatio;
        ctx.save();
        ctx.fillStyle = themeColors().danger;
        for (const v of xs) {
          const x = u.valToPos(v, "x", true);
          if (!Number.isFinite(x)) continue;
          ctx.beginPath();
          ctx.moveTo(x, top + height - s * 1.6);
          ctx.lineTo(x - s, top + height);
          ctx.lineTo(x + s, top + height);
          ctx.closePath();
          ctx.fill();
        }
        ctx.restore();
        void title;
      }],
    },
  };
}

/** Calls `fn` with the data index under the cursor (null when it leaves). */
export function hover(fn: (u: uPlot, idx: number | null) => void): uPlot.Plugin {
  return {
    hooks: {
      setCursor: [(u: uPlot) => fn(u, u.cursor.idx ?? null)],
    },
  };
}

export { uPlot };
