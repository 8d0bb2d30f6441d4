// Compare 2–10 runs: params that differ (highlighted), metric overlays, stage time differences,
// resource peaks, differing inputs (manifests) and context (packages, commit). The first run is
// the baseline the others are measured against. One run alone is compared with its baseline as
// the server chooses it (GET runs/{id}/baseline: the one choice of `flightlog diagnose`,
// `flightlog compare` and triage), and the page says why that run, or why none.
import type { ComponentChildren } from "preact";
import { get } from "../api";
import { type XKind } from "../components/Chart";
import { MetricChart, type Series } from "../components/MetricChart";
import { Card, Empty, ErrorBox, Loading, StatusBadge, Toggle } from "../components/ui";
import { fmtBytes, fmtDuration, fmtNum, fmtValue, shellJoin, shortId } from "../format";
import { useAsync } from "../hooks";
import { Link, paths, setQuery } from "../router";
import { colorOf } from "../theme";
import type { Artifact, Context, Evidence, Json, ResourceSample, Run, Stage } from "../types";
import { ChartControls, parseZoom } from "./run/Metrics";

interface Bundle {
  run: Run;
  context: Context | null;
  stages: Stage[];
  samples: ResourceSample[];
  artifacts: Artifact[];
  manifests: Evidence[];
}

async function load(id: string, signal: AbortSignal): Promise<Bundle> {
  const run = await get<Run>(`runs/${encodeURIComponent(id)}`, undefined, signal);
  const soft = <T,>(p: Promise<T>, fallback: T) => p.catch((err: Error) => (err.name === "AbortError" ? Promise.reject(err) : fallback));
  const [context, stages, samples, artifacts, manifests] = await Promise.all([
    soft(get<Context>(`runs/${run.id}/context`, undefined, signal), null),
    soft(get<{ stages: Stage[] }>(`runs/${run.id}/stages`, undefined, signal).then((d) => d.stages), []),
    soft(get<{ samples: ResourceSample[] }>(`runs/${run.id}/resources`, undefined, signal).then((d) => d.samples), []),
    soft(get<{ artifacts: Artifact[] }>(`runs/${run.id}/artifacts`, undefined, signal).then((d) => d.artifacts), []),
    soft(get<{ evidence: Evidence[] }>(`runs/${run.id}/evidence`, { kind: "manifest" }, signal).then((d) => d.evidence), []),
  ]);
  return { run, context, stages, samples, artifacts, manifests };
}

/** A run's latest value of a metric: a number, a non-finite one ("NaN", "Infinity", "-Infinity"
 *  as JSON carries them), or absent (the run never logged the metric: not the same as NaN). */
type Latest = { kind: "number"; value: number } | { kind: "nonfinite"; text: string } | { kind: "absent" };

function latest(r: Run, m: string): Latest {
  const has = r.metric_summaries ? m in r.metric_summaries : m in r.metrics;
  if (!has) return { kind: "absent" };
  const v = r.metric_summaries?.[m]?.last ?? r.metrics[m];
  if (typeof v === "number" && Number.isFinite(v)) return { kind: "number", value: v };
  if (typeof v === "number") return { kind: "nonfinite", text: Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity" };
  if (typeof v === "string") return { kind: "nonfinite", text: v };
  return { kind: "nonfinite", text: "NaN" }; // logged, with no value: the store keeps a NaN that way
}

/** Whether the row shows a number turning NaN or infinite (or back): such rows come first. */
const finitenessChanged = (vals: Latest[]) =>
  vals.some((v) => v.kind === "nonfinite") && vals.some((v) => v.kind === "number");

const hasMetric = (r: Run, m: string) => (r.metric_summaries ? m in r.metric_summaries : m in r.metrics);

const same = (vals: unknown[]) => vals.every((v) => JSON.stringify(v) === JSON.stringify(vals[0]));

function delta(v: number | null, base: number | null, lowerIsBetter: boolean | null = true): ComponentChildren {
  if (v === null || base === null || base === 0) return null;
  const d = (v - base) / Math.abs(base);
  if (Math.abs(d) < 0.005) return null;
  const tone = lowerIsBetter === null ? "" : (lowerIsBetter ? d < 0 : d > 0) ? "good" : "bad";
  return <span class={`delta ${tone}`}>{d > 0 ? "+" : ""}{(d * 100).toFixed(d > -0.1 && d < 0.1 ? 1 : 0)}%</span>;
}

function peaks(samples: ResourceSample[]) {
  const max = (f: (s: ResourceSample) => number | null | undefined) =>
    samples.reduce<number | null>((m, s) => {
      const v = f(s);
      return typeof v === "number" && Number.isFinite(v) ? (m === null ? v : Math.max(m, v)) : m;
    }, null);
  const growth = (k: string) => {
    const vals = samples.map((s) => s[k]).filter((v): v is number => typeof v === "number");
    return vals.length > 1 ? Math.max(0, vals[vals.length - 1] - vals[0]) : null;
  };
  return {
    cpu: max((s) => s.cpu_percent),
    rss: max((s) => s.rss_bytes),
    cgroup: max((s) => s.cgroup_memory_usage),
    gpuUtil: max((s) => Math.max(...(s.gpus ?? []).map((g) => g.utilization_percent ?? -Infinity))),
    gpuMem: max((s) => Math.max(...(s.gpus ?? []).map((g) => g.memory_used_bytes ?? -Infinity))),
    read: growth("disk_read_bytes"),
    write: growth("disk_write_bytes"),
  };
}

/** The server's choice of a run's baseline (GET runs/{id}/baseline). */
interface BaselineChoice {
  run: string | null;
  choice: string | null;
  reason: string;
  flagged: Record<string, number>;
  comparable_runs: number;
}

export function Compare({ project, query }: { project: string | null; query: URLSearchParams }) {
  const ids = [...new Set((query.get("runs") ?? "").split(",").map((s) => s.trim()).filter(Boolean))].slice(0, 10);
  const single = ids.length === 1 ? ids[0] : null;
  const choice = useAsync(
    (signal) => (single ? get<BaselineChoice>(`runs/${encodeURIComponent(single)}/baseline`, undefined, signal) : Promise.resolve(null)),
    [single],
  );
  if (!single) return <Comparison project={project} query={query} ids={ids} choice={null} />;
  if (choice.error) return <div class="page"><ErrorBox error={choice.error} what="the run's baseline" /></div>;
  if (!choice.data) return <div class="page"><Loading what="the run's baseline" /></div>;
  if (!choice.data.run) {
    return (
      <div class="page">
        <h1>Compare runs</h1>
        <Empty><span id="baseline-none">No baseline for run {shortId(single)}: {choice.data.reason}.</span>{" "}
          Pin one (<span class="mono">flightlog runs edit RUN --tag baseline=true</span>), or pick 2 to 10 runs in a project's runs table.</Empty>
      </div>
    );
  }
  return <Comparison project={project} query={query} ids={[choice.data.run, single]} choice={choice.data} />;
}

function Comparison({ project, query, ids, choice }: { project: string | null; query: URLSearchParams; ids: string[]; choice: BaselineChoice | null }) {
  const data = useAsync((signal) => Promise.all(ids.map((id) => load(id, signal))), [ids.join(",")]);
  const x = (query.get("x") as XKind) || "step";
  const smooth = Math.min(0.99, Math.max(0, Number(query.get("smooth") ?? 0) || 0));
  const log = query.get("log") === "1";
  const zoom = parseZoom(query.get("zoom"));
  const onlyDiff = query.get("diff") === "1";

  const setRuns = (next: string[]) => setQuery({ runs: next.join(",") }, { push: true });
  if (ids.length < 2) {
    return (
      <div class="page">
        <h1>Compare runs</h1>
        <Empty>Pick 2 to 10 runs in a project's runs table and press Compare.{project ? <> <Link to={paths.runs(project)}>Runs of {project}</Link></> : null}</Empty>
      </div>
    );
  }
  if (data.error) return <div class="page"><ErrorBox error={data.error} what="the runs to compare" /></div>;
  if (!data.data) return <div class="page"><Loading what={`${ids.length} runs`} /></div>;
  const bundles = data.data;
  const runs = bundles.map((b) => b.run);
  const base = bundles[0];
  const label = (r: Run) => `${r.name || "run"} ${shortId(r.id)}`;
  const series: Series[] = runs.map((r, i) => ({ id: r.id, label: label(r), start: r.started ? Date.parse(r.started) : null, color: colorOf(i) }));

  const head = (
    <tr>
      <th />
      {runs.map((r, i) => (
        <th key={r.id} class="run-col">
          <span class="swatch" style={{ background: colorOf(i) }} />
          <Link to={paths.run(r.project, r.id)}>{r.name || "(unnamed)"}</Link> <span class="mono muted small">{shortId(r.id)}</span>
          {i === 0 ? <span class="chip">baseline</span> : null}
        </th>
      ))}
    </tr>
  );

  // params
  const paramKeys = [...new Set(runs.flatMap((r) => Object.keys(r.params)))].sort();
  const paramRows = paramKeys.map((k) => ({ k, vals: runs.map((r) => r.params[k]), differs: !same(runs.map((r) => r.params[k] ?? null)) }));
  const nDiff = paramRows.filter((p) => p.differs).length;

  // metrics
  // metrics: a number that became NaN or infinite leads, then the rest by name
  const metricRows = [...new Set(runs.flatMap((r) => Object.keys(r.metric_summaries ?? r.metrics)))].sort()
    .map((m) => ({ m, vals: runs.map((r) => latest(r, m)) }))
    .map((row) => ({ ...row, changed: finitenessChanged(row.vals) }))
    .sort((a, b) => Number(b.changed) - Number(a.changed));
  const metricNames = metricRows.map((row) => row.m);

  // stages
  const stageNames = [...new Set(bundles.flatMap((b) => b.stages.map((s) => s.name)))].filter((n) => !/^attempt \d+$/.test(n));
  const stageTotal = (b: Bundle, n: string) => b.stages.find((s) => s.name === n)?.total ?? null;

  // resources
  const pk = bundles.map((b) => peaks(b.samples));

  // inputs
  const inputs = (b: Bundle) => b.artifacts.filter((a) => a.role === "input");
  const inputNames = [...new Set(bundles.flatMap((b) => inputs(b).map((a) => a.path)))].sort();
  const digestOf = (b: Bundle, p: string) => inputs(b).filter((a) => a.path === p).slice(-1)[0]?.sha256 ?? null;
  const manifestFiles = (b: Bundle, p: string) => {
    const ev = b.manifests.filter((m) => m.name === p).slice(-1)[0];
    const files = (ev?.data?.files as { path: string; sha256?: string; size?: number }[] | undefined) ?? null;
    return files ? new Map(files.map((f) => [f.path, f.sha256 ?? String(f.size)])) : null;
  };

  // context
  const ctx = bundles.map((b) => b.context ?? {});
  const ctxRows: [string, string[]][] = [
    ["commit", ctx.map((c) => (c.git?.commit ? c.git.commit.slice(0, 12) + (c.git.dirty ? " (dirty)" : "") : "—"))],
    ["branch", ctx.map((c) => c.git?.branch ?? "—")],
    ["python", ctx.map((c) => c.python ?? "—")],
    ["host", ctx.map((c) => c.host ?? "—")],
    ["platform", ctx.map((c) => c.platform ?? "—")],
    ["command", ctx.map((c) => (c.command ? shellJoin(c.command) : "—"))],
  ];
  const pkgNames = [...new Set(ctx.flatMap((c) => Object.keys(c.packages ?? {})))].sort();
  const pkgDiff = pkgNames.filter((p) => !same(ctx.map((c) => c.packages?.[p] ?? null)));

  return (
    <div class="page compare-page">
      <div class="page-head">
        <h1>Compare {runs.length} runs</h1>
        {choice ? <p class="muted" id="baseline-reason">Baseline chosen as <span class="mono">flightlog diagnose</span> chooses it: {choice.reason}</p> : null}
        <span class="muted">{runs[0].project}</span>
      </div>
      <div class="compare-runs">
        {runs.map((r, i) => (
          <div key={r.id} class="compare-run" style={{ borderColor: colorOf(i) }}>
            <span class="swatch" style={{ background: colorOf(i) }} />
            <Link to={paths.run(r.project, r.id)} class="strong">{r.name || "(unnamed)"}</Link>
            <span class="mono muted small">{shortId(r.id)}</span>
            <StatusBadge status={r.status} reason={r.end_reason} />
            <span class="muted small">{fmtDuration(r.duration)}</span>
            {i > 0 ? <button type="button" class="btn btn-small" onClick={() => setRuns([r.id, ...ids.filter((x) => x !== ids[i])])} title="Measure the others against this run">Make baseline</button> : null}
            {runs.length > 2 ? <button type="button" class="btn btn-small" aria-label={`remove ${label(r)}`} onClick={() => setRuns(ids.filter((x) => x !== ids[i]))}>✕</button> : null}
          </div>
        ))}
      </div>

      <Card title={`Params (${nDiff} of ${paramKeys.length} differ)`} id="compare-params"
        actions={<Toggle name="only-diff" checked={onlyDiff} onChange={(v) => setQuery({ diff: v ? "1" : null })}>Only differences</Toggle>}>
        <div class="table-wrap">
          <table class="table compact compare-table">
            <thead>{head}</thead>
            <tbody>
              {paramRows.filter((p) => !onlyDiff || p.differs).map((p) => (
                <tr key={p.k} class={p.differs ? "diff" : ""} data-param={p.k} data-differs={p.differs ? "true" : "false"}>
                  <th class="mono">{p.differs ? <span class="diff-mark" title="differs">≠</span> : null}{p.k}</th>
                  {p.vals.map((v, i) => <td key={i} class={`mono ${p.differs && i > 0 && JSON.stringify(v ?? null) !== JSON.stringify(p.vals[0] ?? null) ? "changed" : ""}`}>{fmtValue(v as Json)}</td>)}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {!paramKeys.length ? <p class="muted">No params logged.</p> : null}
      </Card>

      <Card title="Metrics" id="compare-metrics">
        {metricNames.length ? (
          <>
            <div class="table-wrap">
            <table class="table compact compare-table">
              <thead>{head}</thead>
              <tbody>
                {metricRows.map(({ m, vals, changed }) => {
                  const numbers = vals.map((v) => (v.kind === "number" ? v.value : null));
                  const lower = /loss|err|time|latency|perplexity|mse|mae/i.test(m) ? true : /acc|f1|auc|score|precision|recall|map|bleu/i.test(m) ? false : null;
                  return (
                    <tr key={m} data-metric={m} class={changed ? "nan-change diff" : ""} data-nan-change={changed ? "true" : "false"}>
                      <th class="mono">{changed ? <span class="chip chip-nan" title="a number in one run, NaN or infinite in another">NaN</span> : null} {m}</th>
                      {vals.map((v, i) => (
                        <td key={i} class="num" data-value-kind={v.kind}>
                          {v.kind === "absent" ? <span class="not-logged" title="this run never logged the metric">not logged</span>
                            : v.kind === "nonfinite" ? <span class="nonfinite-value" title={vals[0].kind === "number" && i > 0 ? `${fmtNum(numbers[0])} in the baseline` : undefined}>{v.text}</span>
                            : <>{fmtNum(v.value)} {i > 0 ? delta(v.value, numbers[0], lower) : null}</>}
                        </td>
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
            </div>
            <ChartControls x={x} smooth={smooth} log={log} zoom={zoom} />
            <div class="chart-grid">
              {metricNames.map((m) => {
                // ask the server only for the runs that logged the metric: the others have no history (a 404)
                const logged = series.filter((_, i) => hasMetric(runs[i], m));
                const missing = runs.filter((r) => !hasMetric(r, m));
                return (
                  <div class="chart-card" key={m}>
                    <MetricChart name={m} runs={logged} x={x} smooth={smooth} log={log} zoom={zoom} syncKey="compare"
                      onZoom={(z) => setQuery({ zoom: z ? `${+z[0].toPrecision(10)},${+z[1].toPrecision(10)}` : null })} />
                    {missing.length ? <p class="muted not-logged-note">Not logged by {missing.map(label).join(", ")}.</p> : null}
                  </div>
                );
              })}
            </div>
          </>
        ) : <p class="muted">None of these runs logged metrics.</p>}
      </Card>

      <div class="grid-2 compare-panels" style={{ "--runs": runs.length }}>
        <Card title="Stage times" id="compare-stages">
          {stageNames.length ? (
            <div class="table-wrap">
            <table class="table compact compare-table">
              <thead>{head}</thead>
              <tbody>
                <tr><th>whole run</th>{runs.map((r, i) => <td key={i} class="num">{fmtDuration(r.duration)} {i > 0 ? delta(r.duration, runs[0].duration) : null}</td>)}</tr>
                {stageNames.map((n) => {
                  const vals = bundles.map((b) => stageTotal(b, n));
                  return (
                    <tr key={n} data-stage={n}>
                      <th>{n}</th>
                      {vals.map((v, i) => <td key={i} class="num">{fmtDuration(v)} {i > 0 ? delta(v, vals[0]) : null}</td>)}
                    </tr>
                  );
                })}
              </tbody>
            </table>
            </div>
          ) : <p class="muted">No stages recorded.</p>}
        </Card>
        <Card title="Resource peaks" id="compare-resources">
          <div class="table-wrap">
          <table class="table compact compare-table">
            <thead>{head}</thead>
            <tbody>
              <tr><th>CPU peak</th>{pk.map((p, i) => <td key={i} class="num">{p.cpu === null ? "—" : `${Math.round(p.cpu)}%`}</td>)}</tr>
              <tr><th>RSS peak</th>{pk.map((p, i) => <td key={i} class="num">{fmtBytes(p.rss)} {i > 0 ? delta(p.rss, pk[0].rss) : null}</td>)}</tr>
              {pk.some((p) => p.cgroup !== null) ? <tr><th>cgroup memory peak</th>{pk.map((p, i) => <td key={i} class="num">{fmtBytes(p.cgroup)}</td>)}</tr> : null}
              {pk.some((p) => p.gpuUtil !== null && p.gpuUtil >= 0) ? <tr><th>GPU utilization peak</th>{pk.map((p, i) => <td key={i} class="num">{p.gpuUtil === null ? "—" : `${Math.round(p.gpuUtil)}%`}</td>)}</tr> : null}
              {pk.some((p) => p.gpuMem !== null && p.gpuMem >= 0) ? <tr><th>GPU memory peak</th>{pk.map((p, i) => <td key={i} class="num">{fmtBytes(p.gpuMem)}</td>)}</tr> : null}
              <tr><th>disk read</th>{pk.map((p, i) => <td key={i} class="num">{fmtBytes(p.read)}</td>)}</tr>
              <tr><th>disk written</th>{pk.map((p, i) => <td key={i} class="num">{fmtBytes(p.write)}</td>)}</tr>
              <tr><th>samples</th>{bundles.map((b, i) => <td key={i} class="num">{b.samples.length}</td>)}</tr>
            </tbody>
          </table>
          </div>
        </Card>
      </div>

      <div class="grid-2 compare-panels" style={{ "--runs": runs.length }}>
        <Card title="Inputs" id="compare-inputs">
          {inputNames.length ? (
            <div class="table-wrap">
            <table class="table compact compare-table">
              <thead>{head}</thead>
              <tbody>
                {inputNames.map((p) => {
                  const digests = bundles.map((b) => digestOf(b, p));
                  const differs = !same(digests);
                  const baseFiles = manifestFiles(base, p);
                  return (
                    <tr key={p} class={differs ? "diff" : ""} data-input={p} data-differs={differs ? "true" : "false"}>
                      <th class="mono">{differs ? <span class="diff-mark">≠</span> : null}{p}</th>
                      {bundles.map((b, i) => {
                        const d = digests[i];
                        const files = manifestFiles(b, p);
                        let change: ComponentChildren = null;
                        if (i > 0 && files && baseFiles && d !== digests[0]) {
                          const added = [...files.keys()].filter((f) => !baseFiles.has(f));
                          const removed = [...baseFiles.keys()].filter((f) => !files.has(f));
                          const changed = [...files.keys()].filter((f) => baseFiles.has(f) && baseFiles.get(f) !== files.get(f));
                          change = (
                            <details class="small">
                              <summary>{added.length} added, {removed.length} removed, {changed.length} changed</summary>
                              <ul class="mono">
                                {added.slice(0, 20).map((f) => <li key={"a" + f}>+ {f}</li>)}
                                {removed.slice(0, 20).map((f) => <li key={"r" + f}>− {f}</li>)}
                                {changed.slice(0, 20).map((f) => <li key={"c" + f}>~ {f}</li>)}
                              </ul>
                            </details>
                          );
                        }
                        return <td key={i} class={`mono ${i > 0 && d !== digests[0] ? "changed" : ""}`}>{d ? d.slice(0, 12) : "—"}{change}</td>;
                      })}
                    </tr>
                  );
                })}
              </tbody>
            </table>
            </div>
          ) : <p class="muted">No inputs recorded. Record them with <code>run.log_input(path)</code>.</p>}
        </Card>
        <Card title="Context" id="compare-context">
          <div class="table-wrap">
          <table class="table compact compare-table">
            <thead>{head}</thead>
            <tbody>
              {ctxRows.map(([k, vals]) => {
                const differs = !same(vals);
                return (
                  <tr key={k} class={differs ? "diff" : ""} data-context={k}>
                    <th>{differs ? <span class="diff-mark">≠</span> : null}{k}</th>
                    {vals.map((v, i) => <td key={i} class={`mono wrap ${differs && i > 0 && v !== vals[0] ? "changed" : ""}`}>{v}</td>)}
                  </tr>
                );
              })}
            </tbody>
          </table>
          </div>
          <h3 class="sub">Packages that differ ({pkgDiff.length} of {pkgNames.length})</h3>
          {pkgDiff.length ? (
            <div class="table-wrap">
            <table class="table compact compare-table mono small">
              <tbody>
                {pkgDiff.slice(0, 200).map((p) => (
                  <tr key={p} class="diff" data-package={p}>
                    <th>{p}</th>
                    {ctx.map((c, i) => <td key={i} class={i > 0 && (c.packages?.[p] ?? null) !== (ctx[0].packages?.[p] ?? null) ? "changed" : ""}>{c.packages?.[p] ?? "—"}</td>)}
                  </tr>
                ))}
              </tbody>
            </table>
            </div>
          ) : <p class="muted">The same packages everywhere.</p>}
        </Card>
      </div>
      <Failures runs={runs} />
    </div>
  );
}

function Failures({ runs }: { runs: Run[] }) {
  const failed = runs.filter((r) => r.failure);
  if (!failed.length) return null;
  return (
    <Card title="Failures">
      <ul>
        {failed.map((r) => (
          <li key={r.id}><Link to={paths.run(r.project, r.id)}>{r.name || shortId(r.id)}</Link>: <span class="mono">{r.failure?.exception ?? "failed"}{r.failure?.message ? `: ${r.failure.message}` : ""}</span></li>
        ))}
      </ul>
    </Card>
  );
}
