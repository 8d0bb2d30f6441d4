// Explore: params against a metric over a set of runs — a sweep's trials (?sweep=RUN) or any
// filter (?filter=...) — as parallel coordinates and a scatter. Click a line or a dot to open
// that run.
import { useEffect, useMemo, useState } from "preact/hooks";
import { get } from "../api";
import { type Axis, makeAxis, ParallelCoordinates, Scatter } from "../components/SweepPlots";
import { Empty, ErrorBox, Loading } from "../components/ui";
import { useAsync } from "../hooks";
import { navigate, paths, setQuery } from "../router";
import type { Run, RunPage } from "../types";

const MAX_RUNS = 1000;
const MAX_AXES = 12;

export function Explore({ project, query }: { project: string; query: URLSearchParams }) {
  const sweep = query.get("sweep");
  const filter = query.get("filter") ?? "";
  const [draft, setDraft] = useState(filter);
  useEffect(() => setDraft(filter), [filter]);

  const sweepRun = useAsync((signal) => (sweep ? get<Run>(`runs/${encodeURIComponent(sweep)}`, undefined, signal).catch(() => null) : Promise.resolve(null)),
    [sweep]).data ?? null;
  const page = useAsync((signal) => {
    const effective = sweep ? `tags.sweep = '${sweep.replace(/'/g, "\\'")}'` : filter.trim() || undefined;
    return get<RunPage>("runs", { project, filter: effective, limit: MAX_RUNS }, signal);
  }, [project, sweep, filter]);
  const runs = page.loading ? null : page.data?.runs ?? null;

  const metricNames = useMemo(() => [...new Set((runs ?? []).flatMap((r) => Object.keys(r.metrics)))].sort(), [runs]);
  const paramNames = useMemo(
    () => [...new Set((runs ?? []).flatMap((r) => Object.keys(r.params)))].filter((k) => !k.startsWith("sweep.")).sort(),
    [runs],
  );
  const sweepMetric = sweepRun && typeof sweepRun.params["sweep.metric"] === "string" ? String(sweepRun.params["sweep.metric"]) : null;
  const metric = query.get("metric") || sweepMetric || metricNames[0] || "";
  const goal = (query.get("goal") || (sweepRun?.params["sweep.goal"] as string | undefined) || "minimize") === "maximize" ? "maximize" : "minimize";

  const shown = useMemo(() => (runs ?? []).filter((r) => metric && r.metrics[metric] !== undefined), [runs, metric]);
  const axes = useMemo(() => paramNames.map((p) => makeAxis(shown, `params.${p}`))
    .filter((a): a is Axis => a !== null && (a.kind === "number" ? a.max > a.min : a.categories.length > 1)).slice(0, MAX_AXES),
  [shown, paramNames]);
  const metricAxis = useMemo(() => (metric ? makeAxis(shown, `metrics.${metric}`) : null), [shown, metric]);
  const xKey = query.get("x") || (axes.find((a) => a.kind === "number") ?? axes[0])?.label || "";
  const xAxis = axes.find((a) => a.label === xKey) ?? axes[0] ?? null;
  const open = (r: Run) => navigate(paths.run(r.project, r.id));

  return (
    <div class="page explore-page">
      <div class="page-head">
        <h1>{sweep ? <>Sweep <span class="mono">{sweep.slice(0, 8)}</span></> : "Explore"}</h1>
        <span class="muted" id="explore-count">
          {runs ? `${shown.length} run${shown.length === 1 ? "" : "s"}${sweepRun ? ` · ${sweepRun.name ?? ""}` : ""}` : ""}
        </span>
      </div>
      <form class="filter-bar" onSubmit={(e) => { e.preventDefault(); setQuery({ filter: draft.trim() || null, sweep: null }); }}>
        {sweep ? null : (
          <input type="search" id="explore-filter" class="filter-input" spellcheck={false} value={draft}
            placeholder="Filter: params.lr > 0.001 and status = 'succeeded'   (docs/filters.md)"
            onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
        )}
        <label class="inline-label">Metric
          <select id="explore-metric" value={metric} onChange={(e) => setQuery({ metric: (e.target as HTMLSelectElement).value })}>
            {metricNames.map((m) => <option key={m} value={m}>{m}</option>)}
          </select>
        </label>
        <label class="inline-label">Goal
          <select id="explore-goal" value={goal} onChange={(e) => setQuery({ goal: (e.target as HTMLSelectElement).value })}>
            <option value="minimize">minimize</option>
            <option value="maximize">maximize</option>
          </select>
        </label>
      </form>
      {page.error ? <ErrorBox error={page.error} what="the runs" /> : null}
      {!runs && !page.error ? <Loading what="the runs" /> : null}
      {runs && (!metricAxis || !axes.length) ? (
        <Empty>No runs with both params that vary and the metric {metric ? `“${metric}”` : ""}: nothing to plot.</Empty>
      ) : null}
      {runs && metricAxis && axes.length ? (
        <>
          <section class="card" id="parallel-coordinates">
            <div class="card-head"><h2>Params → {metric}</h2><span class="muted">blue is best · click a line to open the run</span></div>
            <div class="card-body"><ParallelCoordinates runs={shown} axes={axes} metric={metricAxis} goal={goal} onPick={open} /></div>
          </section>
          {xAxis ? (
            <section class="card" id="param-scatter">
              <div class="card-head">
                <h2>{metric} against</h2>
                <select id="scatter-x" aria-label="param on the x axis" value={xAxis.label}
                  onChange={(e) => setQuery({ x: (e.target as HTMLSelectElement).value })}>
                  {axes.map((a) => <option key={a.key} value={a.label}>{a.label}</option>)}
                </select>
              </div>
              <div class="card-body"><Scatter runs={shown} xAxis={xAxis} metric={metricAxis} goal={goal} onPick={open} /></div>
            </section>
          ) : null}
        </>
      ) : null}
    </div>
  );
}
