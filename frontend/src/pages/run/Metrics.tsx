// Metrics: a chart per metric (step or time on x, smoothing, log scale, zoom that fetches the
// detail of the zoomed range, hover values), live while the run runs.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, stream } from "../../api";
import { type XKind } from "../../components/Chart";
import { MetricChart } from "../../components/MetricChart";
import { Empty, ErrorBox, FINISHED, Loading, Segmented, Toggle } from "../../components/ui";
import { fmtNum } from "../../format";
import { useAsync, useSeen } from "../../hooks";
import { setQuery } from "../../router";
import type { MetricSummary, Run } from "../../types";

export function parseZoom(v: string | null): [number, number] | null {
  if (!v) return null;
  const [a, b] = v.split(",").map(Number);
  return Number.isFinite(a) && Number.isFinite(b) && b > a ? [a, b] : null;
}

export function ChartControls(props: { x: XKind; smooth: number; log: boolean; zoom: [number, number] | null; search?: string; showSearch?: boolean }) {
  const { x, smooth, log, zoom } = props;
  return (
    <div class="chart-controls">
      <Segmented label="x axis" value={x} options={[["step", "Step"], ["relative", "Time since start"], ["time", "Wall clock"]]}
        onChange={(v) => setQuery({ x: v === "step" ? null : v, zoom: null })} />
      <label class="inline-label" title="Exponential moving average; the raw line stays faint behind">
        Smoothing
        <input type="range" min="0" max="0.99" step="0.01" value={smooth} name="smoothing"
          onInput={(e) => setQuery({ smooth: Number((e.target as HTMLInputElement).value) > 0 ? (e.target as HTMLInputElement).value : null })} />
        <span class="mono small">{smooth.toFixed(2)}</span>
      </label>
      <Toggle name="log" checked={log} onChange={(v) => setQuery({ log: v ? "1" : null })}>Log scale</Toggle>
      {zoom ? (
        <button type="button" class="btn btn-small" id="reset-zoom" onClick={() => setQuery({ zoom: null })}>
          Reset zoom ({fmtNum(zoom[0])} – {fmtNum(zoom[1])})
        </button>
      ) : <span class="muted small">Drag across a chart to zoom; double-click to reset.</span>}
      {props.showSearch ? (
        <input type="search" class="small-input" placeholder="Find a metric" value={props.search} name="metric-search"
          onInput={(e) => setQuery({ m: (e.target as HTMLInputElement).value || null })} />
      ) : null}
    </div>
  );
}

function LazyChart(props: { children: preact.ComponentChildren }) {
  const [ref, seen] = useSeen<HTMLDivElement>();
  return <div ref={ref} class="chart-card">{seen ? props.children : <div class="chart-placeholder" />}</div>;
}

export function Metrics({ run, query }: { run: Run; query: URLSearchParams }) {
  const x = (query.get("x") as XKind) || "step";
  const smooth = Math.min(0.99, Math.max(0, Number(query.get("smooth") ?? 0) || 0));
  const log = query.get("log") === "1";
  const search = query.get("m") ?? "";
  const zoom = parseZoom(query.get("zoom"));
  const running = !FINISHED.has(run.status);
  const summaries = useAsync((signal) => get<{ metrics: MetricSummary[] }>(`runs/${run.id}/metrics`, undefined, signal), [run.id]);
  const [live, setLive] = useState(0);
  const pending = useRef(false);

  useEffect(() => {
    if (!running) return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const close = stream(run.id, { events: "metrics" }, {
      metrics: () => {
        if (pending.current) return;
        pending.current = true;
        timer = setTimeout(() => {
          pending.current = false;
          setLive((n) => n + 1);
        }, 1500);
      },
      end: () => setLive((n) => n + 1),
    });
    return () => {
      close();
      if (timer) clearTimeout(timer);
    };
  }, [run.id, running]);
  useEffect(() => {
    if (live) summaries.reload();
  }, [live]);

  const series = useMemo(() => [{ id: run.id, label: run.name || run.id, start: run.started ? Date.parse(run.started) : null }], [run.id, run.started]);
  const list = summaries.data?.metrics ?? [];
  const shown = list.filter((m) => m.name.toLowerCase().includes(search.toLowerCase()));
  return (
    <div class="metrics-tab">
      <ChartControls x={x} smooth={smooth} log={log} zoom={zoom} search={search} showSearch={list.length > 6} />
      {summaries.error ? <ErrorBox error={summaries.error} what="metrics" /> : null}
      {!summaries.data && !summaries.error ? <Loading what="metrics" /> : null}
      {summaries.data && !list.length ? <Empty>No metrics logged{running ? " yet" : ""}. Log them with <code>run.log({"{"}"loss": 0.3{"}"}, step=i)</code>.</Empty> : null}
      <div class="chart-grid">
        {shown.map((m) => (
          <LazyChart key={m.name}>
            <MetricChart name={m.name} runs={series} x={x} smooth={smooth} log={log} zoom={zoom} syncKey={`run-${run.id}`}
              refresh={zoom ? 0 : live} onZoom={(z) => setQuery({ zoom: z ? `${+z[0].toPrecision(10)},${+z[1].toPrecision(10)}` : null })} />
            <div class="metric-foot muted small">
              last {fmtNum(m.last)} at step {m.last_step ?? "—"} · min {fmtNum(m.min)} · max {fmtNum(m.max)}
            </div>
          </LazyChart>
        ))}
      </div>
    </div>
  );
}
