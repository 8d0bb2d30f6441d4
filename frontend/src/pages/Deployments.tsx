// Deployments (docs/models.md): every endpoint in every environment with the version it should
// serve and how many replicas serve it, and a deployment's page: its timeline (rollout markers at
// the new version's first traffic, a lane per replica from its start to its last heartbeat, the
// desired version above), each version's totals over the window it served (the table `flightlog
// serving stats --by version` prints), the charts per version under it (p99 latency, 5xx rate,
// requests per minute), live drift per feature against the version's training data, the alerts
// that named the endpoint, and the deployment diagnosis when the server has one.
import { useMemo, useRef, useState } from "preact/hooks";
import { ApiError, get } from "../api";
import { Chart, uPlot, xAxis, yAxis } from "../components/Chart";
import { Card, Empty, ErrorBox, Loading } from "../components/ui";
import { fmtAgo, fmtMs, fmtNum, fmtRate, fmtTime, ms, shortId } from "../format";
import { useAsync, useInterval, useWidth } from "../hooks";
import { Link, paths } from "../router";
import { colorOf, cssVar } from "../theme";
import type {
  Deployment, DeploymentDiagnosis, DeploymentTimeline, DistributionSummary, EndpointDrift, ReplicaRow, Rollout, VersionStats,
} from "../types";

function notThere(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 404 || err.status === 403);
}

export function Deployments() {
  const list = useAsync((signal) => get<{ deployments: Deployment[] }>("deployments", undefined, signal)
    .catch((err) => (err instanceof ApiError && err.noRoute ? { deployments: [] } : Promise.reject(err))), []);
  const rows = list.data?.deployments ?? [];
  return (
    <div class="page deployments-page">
      <h1>Deployments</h1>
      {list.error ? <ErrorBox error={list.error} what="deployments" /> : null}
      {!list.data && !list.error ? <Loading what="deployments" /> : null}
      {list.data && !rows.length ? (
        <Empty>No deployments yet. Say what an endpoint should serve with <code>flightlog deploy fraud@production --endpoint fraud-api --env prod</code>.</Empty>
      ) : null}
      {rows.length ? (
        <table class="table deployments-table">
          <thead>
            <tr><th>Endpoint</th><th>Env</th><th>Desired</th><th class="num">Serving</th><th class="num">Gone</th><th>Since</th><th>By</th></tr>
          </thead>
          <tbody>
            {rows.map((d) => <DeploymentRow key={`${d.project}/${d.endpoint}/${d.env}`} d={d} />)}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function DeploymentRow({ d }: { d: Deployment }) {
  const reps = useAsync((signal) => get<{ replicas: ReplicaRow[] }>(`serving/${encodeURIComponent(d.endpoint)}/replicas`, { env: d.env, project: d.project }, signal)
    .catch((err) => (notThere(err) ? { replicas: [] } : Promise.reject(err))), [d.endpoint, d.env, d.project]);
  const all = reps.data?.replicas ?? [];
  const serving = all.filter((r) => r.state === "serving");
  const current = serving.filter((r) => String(r.version) === String(d.version)).length;
  return (
    <tr data-endpoint={d.endpoint} data-env={d.env}>
      <td><Link to={paths.deployment(d.endpoint, d.env, d.project)} class="strong">{d.endpoint}</Link></td>
      <td>{d.env}</td>
      <td><Link to={paths.model(d.model, d.project)}>{d.model}</Link> v{d.version} {d.ref && !d.ref.endsWith(`/${d.version}`) ? <span class="muted small">({d.ref.replace(/^models:\//, "")})</span> : null}</td>
      <td class="num" title={`${current} on the desired version`}>{reps.data ? serving.length : "…"}</td>
      <td class="num">{reps.data ? all.length - serving.length : "…"}</td>
      <td title={fmtTime(d.updated)}>{fmtAgo(d.updated)}</td>
      <td>{d.updated_by ?? "—"}</td>
    </tr>
  );
}

interface Span { t0: number; t1: number }

/** The x range of the timeline (epoch seconds): everything the document knows about. */
function rangeOf(doc: DeploymentTimeline, now: number): Span {
  const ts: number[] = [];
  const add = (iso: string | null | undefined) => {
    const v = ms(iso);
    if (v !== null) ts.push(v / 1000);
  };
  doc.desired.forEach((d) => add(d.time));
  doc.replicas.forEach((r) => { add(r.started); add(r.ended ?? r.heartbeat); });
  doc.minutes.forEach((m) => { ts.push(m.minute * 60); ts.push(m.minute * 60 + 60); });
  doc.alerts.forEach((a) => add(a.active_since ?? a.fired_at));
  if (doc.replicas.some((r) => r.state === "serving")) ts.push(now);
  if (!ts.length) return { t0: now - 3600, t1: now };
  let t0 = Math.min(...ts);
  let t1 = Math.max(...ts);
  if (t1 - t0 < 60) t1 = t0 + 60;
  const pad = (t1 - t0) * 0.03;
  t0 -= pad;
  t1 += pad;
  return { t0, t1 };
}

function ticks(span: Span, n: number): number[] {
  const steps = [1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
  const want = (span.t1 - span.t0) / Math.max(2, n);
  const step = steps.find((s) => s >= want) ?? 86400;
  const out: number[] = [];
  for (let t = Math.ceil(span.t0 / step) * step; t <= span.t1; t += step) out.push(t);
  return out;
}

function hhmm(t: number, withSeconds: boolean): string {
  const s = fmtTime(t * 1000, { date: false });
  return withSeconds ? s : s.slice(0, 5);
}

export function DeploymentPage({ endpoint, query }: { endpoint: string; query: URLSearchParams }) {
  const env = query.get("env");
  const project = query.get("project");
  const since = query.get("since");
  const base = `deployments/${encodeURIComponent(endpoint)}`;
  const doc = useAsync((signal) => get<DeploymentTimeline>(`${base}/timeline`, { env, project, since }, signal), [endpoint, env, project, since]);
  const diagnosis = useAsync((signal) => get<DeploymentDiagnosis>(`${base}/diagnosis`, { env, project }, signal)
    .catch(() => null), [endpoint, env, project]);
  const live = !!doc.data?.replicas.some((r) => r.state === "serving");
  useInterval(() => doc.reload(), live ? 15_000 : null);

  if (doc.error) return <div class="page"><h1>{endpoint}</h1><ErrorBox error={doc.error} what={`deployment ${endpoint}`} /></div>;
  if (!doc.data) return <div class="page"><Loading what={`deployment ${endpoint}`} /></div>;
  const d = doc.data;
  const serving = d.replicas.filter((r) => r.state === "serving").length;
  return (
    <div class="page deployment-page">
      <div class="page-head">
        <h1>{d.endpoint} <span class="muted">({d.env})</span></h1>
        <span>should serve <Link to={paths.model(d.model, d.project)} class="strong">{d.model}</Link> <strong>v{d.version}</strong></span>
        <span class="muted">· {serving} serving · {d.replicas.length - serving} gone · {d.rollouts.length} rollout{d.rollouts.length === 1 ? "" : "s"}</span>
      </div>
      {diagnosis.data ? <DiagnosisCard report={diagnosis.data} /> : null}
      <Card title="Timeline" id="timeline">
        <Timeline doc={d} />
      </Card>
      <VersionTable doc={d} />
      <ServingCharts doc={d} />
      <DriftPanel endpoint={d.endpoint} env={d.env} project={d.project} />
      <Card title={`Alerts (${d.alerts.length})`} id="deployment-alerts">
        {d.alerts.length ? (
          <ul class="alerts">
            {d.alerts.map((a) => (
              <li key={a.id} class={`alert alert-${a.state}`} data-state={a.state}>
                <span class={`chip ${a.state === "firing" ? "chip-danger" : a.state === "pending" ? "chip-warn" : ""}`}>{a.state}</span>
                <strong> {a.rule}</strong> <span class="muted small">{a.severity}{a.labels.version ? ` · v${a.labels.version}` : ""}</span>
                <div>{a.summary}</div>
                <div class="muted small">{a.fired_at ? `fired ${fmtTime(a.fired_at)}` : a.active_since ? `since ${fmtTime(a.active_since)}` : ""}{a.resolved_at ? ` · resolved ${fmtTime(a.resolved_at)}` : ""}</div>
              </li>
            ))}
          </ul>
        ) : <Empty>No alert has named this endpoint.</Empty>}
      </Card>
      <Card title="Desired state history" id="desired-history">
        <table class="table compact desired-history">
          <thead><tr><th>When</th><th>Change</th><th>Asked for</th><th>Who</th></tr></thead>
          <tbody>
            {d.desired.slice().reverse().map((c, i) => (
              <tr key={i}>
                <td>{fmtTime(c.time)}</td>
                <td>{c.from_version === null ? `deployed v${c.version}` : `v${c.from_version} → v${c.version}`}</td>
                <td class="mono">{c.ref?.replace(/^models:\//, "") ?? ""}</td>
                <td>{c.actor ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
    </div>
  );
}

function versionColors(doc: DeploymentTimeline): (v: string | number | null) => string {
  const versions = [...new Set([
    ...doc.desired.map((x) => String(x.version)),
    ...doc.replicas.map((r) => String(r.version)),
    ...doc.minutes.map((m) => String(m.version)),
  ])].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));
  return (v) => colorOf(Math.max(0, versions.indexOf(String(v))));
}

const LABEL_W = 190;
const LANE_H = 22;

function rolloutLabel(r: Rollout, withSeconds: boolean): string {
  const verb = r.kind === "rollback" ? "rollback " : "";
  const deployed = ms(r.deployed_at);
  const at = hhmm(ms(r.time)! / 1000, withSeconds);
  const asked = deployed !== null ? hhmm(deployed / 1000, withSeconds) : null;
  const beside = r.first_traffic_at ? (asked && asked !== at ? ` (deployed ${asked})` : "") : " (deployed; no traffic yet)";
  return `${verb}v${r.from_version} → v${r.to_version} at ${at}${beside} on ${r.replicas} replica${r.replicas === 1 ? "" : "s"}`;
}

function Timeline({ doc }: { doc: DeploymentTimeline }) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const now = Date.now() / 1000;
  const span = rangeOf(doc, now);
  const color = versionColors(doc);
  const w = Math.max(400, width);
  const plotW = w - LABEL_W - 12;
  const x = (t: number) => LABEL_W + ((t - span.t0) / (span.t1 - span.t0)) * plotW;
  const withSeconds = span.t1 - span.t0 < 600;
  const lanes = doc.replicas;
  const top = 44; // rollout labels, then the desired strip
  const desiredY = top;
  const lanesY = top + 30;
  const height = lanesY + Math.max(1, lanes.length) * LANE_H + 28;
  const desiredSegs = doc.desired.map((c, i) => {
    const t0 = ms(c.time)! / 1000;
    const t1 = i + 1 < doc.desired.length ? ms(doc.desired[i + 1].time)! / 1000 : span.t1;
    return { t0, t1, version: c.version };
  });
  const fg = cssVar("--fg-muted") || "#666";
  const grid = cssVar("--grid") || "rgba(128,128,128,.15)";
  return (
    <div class="deploy-timeline" ref={ref}>
      {width ? (
        <svg width={w} height={height} role="img" aria-label="deployment timeline" class="deploy-timeline-svg">
          {ticks(span, Math.floor(plotW / 110)).map((t) => (
            <g key={t} class="tick">
              <line x1={x(t)} x2={x(t)} y1={desiredY - 6} y2={height - 22} stroke={grid} />
              <text x={x(t)} y={height - 8} text-anchor="middle" fill={fg} font-size="11">{hhmm(t, withSeconds)}</text>
            </g>
          ))}
          <text x={8} y={desiredY + 14} fill={fg} font-size="12">desired</text>
          {desiredSegs.map((s, i) => (
            <g key={i} class="desired-seg" data-version={s.version}>
              <rect x={x(s.t0)} y={desiredY + 2} width={Math.max(2, x(s.t1) - x(s.t0))} height={16} rx={3} fill={color(s.version)} opacity={0.25} />
              <text x={x(s.t0) + 4} y={desiredY + 14} font-size="11" fill="currentColor">v{s.version}</text>
            </g>
          ))}
          {lanes.length ? null : <text x={LABEL_W} y={lanesY + 15} fill={fg} font-size="12">no replica has reported serving this endpoint yet</text>}
          {lanes.map((r, i) => <Lane key={r.run_id} r={r} y={lanesY + i * LANE_H} x={x} now={now} color={color(r.version)} fg={fg} project={doc.project} />)}
          {doc.rollouts.map((r, i) => {
            const t = ms(r.time)! / 1000;
            const label = rolloutLabel(r, withSeconds);
            const right = x(t) > LABEL_W + plotW * 0.6;
            return (
              <g key={i} class={`rollout-marker rollout-${r.kind}`} data-from={r.from_version} data-to={r.to_version}>
                <line x1={x(t)} x2={x(t)} y1={14 + (i % 2) * 14} y2={height - 22} stroke={r.kind === "rollback" ? cssVar("--warn") || "#d97706" : cssVar("--accent") || "#2563eb"} stroke-width={2} stroke-dasharray="5 3" />
                <text x={x(t) + (right ? -4 : 4)} y={12 + (i % 2) * 14} font-size="12" font-weight="600" text-anchor={right ? "end" : "start"} fill="currentColor">{label}</text>
              </g>
            );
          })}
          {doc.alerts.map((a) => {
            const t = (ms(a.fired_at ?? a.active_since) ?? 0) / 1000;
            if (!t) return null;
            return (
              <g key={a.id} class="alert-marker" data-rule={a.rule}>
                <title>{`${a.rule}: ${a.summary}`}</title>
                <path d={`M ${x(t)} ${desiredY + 20} l -6 10 l 12 0 z`} fill={cssVar("--danger") || "#dc2626"} />
              </g>
            );
          })}
        </svg>
      ) : null}
      <div class="timeline-legend small muted">
        {[...new Set(doc.replicas.map((r) => String(r.version)))].map((v) => <span key={v} class="legend-chip"><span class="swatch" style={{ background: color(v) }} />v{v}</span>)}
        <span>bar: from the replica's start to its end or last heartbeat · ✕ gone</span>
      </div>
    </div>
  );
}

function Lane(props: { r: ReplicaRow; y: number; x: (t: number) => number; now: number; color: string; fg: string; project: string }) {
  const { r, y, x } = props;
  const t0 = (ms(r.started) ?? 0) / 1000;
  const end = ms(r.ended ?? r.heartbeat);
  const t1 = r.state === "serving" ? props.now : end !== null ? end / 1000 : t0;
  const gone = r.state !== "serving";
  const x0 = x(t0);
  const x1 = Math.max(x0 + 3, x(t1));
  const title = `${r.replica ?? r.run_id} · v${r.version} · ${r.state} (${r.status}) · ${fmtTime(r.started)} → ${r.state === "serving" ? "now" : fmtTime(r.ended ?? r.heartbeat)}`;
  return (
    <g class={`replica-lane ${gone ? "gone" : "serving"}`} data-replica={r.replica ?? ""} data-version={r.version ?? ""} data-state={r.state}>
      <title>{title}</title>
      <a href={`projects/${encodeURIComponent(props.project)}/runs/${encodeURIComponent(r.run_id)}`}>
        <text x={8} y={y + 15} font-size="12" fill="currentColor" class="mono">{(r.replica ?? shortId(r.run_id)).slice(0, 22)}</text>
      </a>
      <text x={LABEL_W - 8} y={y + 15} font-size="11" text-anchor="end" fill={props.fg}>{gone ? "gone" : "serving"}</text>
      <rect x={x0} y={y + 4} width={x1 - x0} height={LANE_H - 8} rx={3} fill={props.color} opacity={gone ? 0.55 : 0.95} />
      {x1 - x0 > 24 ? <text x={x0 + 4} y={y + 15} font-size="11" fill="#fff">v{r.version}</text> : <text x={x1 + 4} y={y + 15} font-size="11" fill="currentColor">v{r.version}</text>}
      {gone ? <text x={x1 + (x1 - x0 > 24 ? 3 : 24)} y={y + 15} font-size="12" fill={props.fg} class="gone-mark">✕</text> : null}
    </g>
  );
}

/** Vertical dashed lines where the rollouts happened, on every chart under the timeline. */
function rolloutLines(get: () => { t: number; color: string }[]): uPlot.Plugin {
  return {
    hooks: {
      draw: [(u: uPlot) => {
        const { ctx } = u;
        const { top, height } = u.bbox;
        ctx.save();
        ctx.setLineDash([5 * devicePixelRatio, 3 * devicePixelRatio]);
        ctx.lineWidth = 1.5 * devicePixelRatio;
        for (const { t, color } of get()) {
          const px = u.valToPos(t, "x", true);
          if (!Number.isFinite(px)) continue;
          ctx.strokeStyle = color;
          ctx.beginPath();
          ctx.moveTo(px, top);
          ctx.lineTo(px, top + height);
          ctx.stroke();
        }
        ctx.restore();
      }],
    },
  };
}

function ServingCharts({ doc }: { doc: DeploymentTimeline }) {
  const color = versionColors(doc);
  const span = rangeOf(doc, Date.now() / 1000);
  const { xs, versions, col } = useMemo(() => {
    const xs = [...new Set(doc.minutes.map((m) => m.minute * 60))].sort((a, b) => a - b);
    const versions = [...new Set(doc.minutes.map((m) => m.version))].sort((a, b) => Number(a) - Number(b));
    const at = new Map(doc.minutes.map((m) => [`${m.version}|${m.minute * 60}`, m]));
    const col = (v: string, pick: (m: DeploymentTimeline["minutes"][number]) => number | null) =>
      xs.map((x) => {
        const m = at.get(`${v}|${x}`);
        return m ? pick(m) : null;
      });
    return { xs, versions, col };
  }, [doc.minutes]);
  const lines = useRef<{ t: number; color: string }[]>([]);
  lines.current = doc.rollouts.map((r) => ({ t: ms(r.time)! / 1000, color: r.kind === "rollback" ? cssVar("--warn") || "#d97706" : cssVar("--accent") || "#2563eb" }));
  if (!doc.minutes.length) {
    return <Card title="Traffic" id="serving-charts"><Empty>No serving minutes yet: a replica writes each minute once it is over, and when it stops.</Empty></Card>;
  }
  const panels: { id: string; title: string; unit: (v: number) => string; pick: (m: DeploymentTimeline["minutes"][number]) => number | null }[] = [
    { id: "p99", title: "p99 latency", unit: fmtMs, pick: (m) => m.p99_ms },
    { id: "error-rate", title: "5xx error rate", unit: fmtRate, pick: (m) => m.error_rate },
    { id: "requests", title: "Requests per minute", unit: (v) => fmtNum(Math.round(v)), pick: (m) => m.requests },
  ];
  // each header says the version's figure over the whole window it served (traffic-weighted),
  // never the last minute's: the per-minute values are the chart's
  const totals = new Map((doc.versions ?? []).map((v) => [String(v.version), v]));
  const windowed: Record<string, (v: VersionStats) => number | null> = {
    "p99": (v) => v.p99_ms,
    "error-rate": (v) => v.error_rate,
    "requests": (v) => v.throughput_per_min,
  };
  return (
    <Card title="Traffic per version" id="serving-charts">
      <div class="chart-grid serving-charts">
        {panels.map((p) => (
          <div class="chart-card" key={p.id} data-panel={p.id}>
            <div class="metric-head">
              <h3>{p.title}</h3>
              <span class="muted small" title="over the window each version served">{versions.map((v) => {
                const t = totals.get(String(v));
                return `v${v} ${p.unit((t ? windowed[p.id](t) : null) ?? NaN)}`;
              }).join(" · ")}</span>
            </div>
            <Chart label={`${p.title} chart`} data={[xs, ...versions.map((v) => col(v, p.pick))] as uPlot.AlignedData}
              rebuildKey={`${p.id}|${versions.join(",")}|${span.t0}|${span.t1}`}
              build={(width) => ({
                width, height: 180,
                series: [{ label: "time" }, ...versions.map((v) => ({
                  label: `v${v}`, stroke: color(v), width: 2, spanGaps: false, points: { show: true, size: 5 },
                  value: (_u: uPlot, val: number | null) => (val === null ? "—" : p.unit(val)),
                }))],
                scales: { x: { time: true, range: () => [span.t0, span.t1] as uPlot.Range.MinMax }, y: { range: (_u: uPlot, _lo: number, hi: number) => [0, hi > 0 ? hi * 1.15 : 1] as uPlot.Range.MinMax } },
                axes: [xAxis("time"), yAxis(p.unit)],
                cursor: { sync: { key: `deploy-${doc.endpoint}` } },
                legend: { live: true },
                plugins: [rolloutLines(() => lines.current)],
              })} />
          </div>
        ))}
      </div>
    </Card>
  );
}

/** Each version over the window it served: what users felt, side by side. */
function VersionTable({ doc }: { doc: DeploymentTimeline }) {
  const rows = doc.versions ?? [];
  if (!rows.length) return null;
  const color = versionColors(doc);
  return (
    <Card title="Per version" id="version-stats">
      <table class="table compact version-stats">
        <thead>
          <tr>
            <th>Version</th><th class="num">Requests</th><th class="num">5xx</th><th class="num">4xx</th>
            <th class="num">p50</th><th class="num">p95</th><th class="num">p99</th><th class="num">Req/min</th>
            <th>Served</th><th>5xx types</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((v) => (
            <tr key={v.version} data-version={v.version}>
              <td><span class="swatch" style={{ background: color(v.version) }} /> v{v.version}</td>
              <td class="num" data-col="requests">{fmtNum(v.requests)}</td>
              <td class="num" data-col="error_rate">{fmtRate(v.error_rate)}</td>
              <td class="num" data-col="client_error_rate">{fmtRate(v.client_error_rate)}</td>
              <td class="num" data-col="p50_ms">{fmtMs(v.p50_ms)}</td>
              <td class="num" data-col="p95_ms">{fmtMs(v.p95_ms)}</td>
              <td class="num" data-col="p99_ms">{fmtMs(v.p99_ms)}</td>
              <td class="num" data-col="throughput">{v.throughput_per_min === null ? "—" : fmtNum(Math.round(v.throughput_per_min))}</td>
              <td class="small">{fmtTime(v.first, { date: false })} → {fmtTime(v.last, { date: false })} <span class="muted">({v.minutes} min)</span></td>
              <td class="small" data-col="error_types" title={Object.entries(v.error_messages ?? {}).map(([k, m]) => `${k}: ${m}`).join("\n")}>
                {Object.entries(v.error_types).map(([k, n]) => `${k} ${n}`).join(", ") || "—"}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Card>
  );
}

/** A distribution in one line: `mean 100 · p5 67 · p50 100 · p95 133` or `BR 30% · US 50%`. */
function fmtDist(d: DistributionSummary | null | undefined): string {
  if (!d) return "—";
  if (d.kind === "numeric") {
    return (["mean", "p5", "p50", "p95"] as const).filter((k) => d[k] !== null && d[k] !== undefined)
      .map((k) => `${k} ${fmtNum(Number(Number(d[k]).toPrecision(3)))}`).join(" · ");
  }
  return (d.top ?? []).map((t) => `${t.value} ${fmtRate(t.share)}`).join(" · ") || "—";
}

/** Live drift: each feature of each version serving, against the training data of that version. */
function DriftPanel({ endpoint, env, project }: { endpoint: string; env: string; project: string }) {
  const [since, setSince] = useState("1h");
  const drift = useAsync((signal) => get<EndpointDrift>(`serving/${encodeURIComponent(endpoint)}/drift`, { env, project, since }, signal)
    .catch((err) => (notThere(err) ? null : Promise.reject(err))), [endpoint, env, project, since]);
  return (
    <Card title="Live drift" id="drift-panel" actions={
      <select class="small" aria-label="drift window" value={since} onChange={(e) => setSince((e.target as HTMLSelectElement).value)}>
        {["15m", "1h", "6h", "24h", "7d"].map((w) => <option key={w} value={w}>last {w}</option>)}
      </select>
    }>
      {drift.error ? <ErrorBox error={drift.error} what="live drift" /> : null}
      {drift.loading && !drift.data ? <Loading what="live drift" /> : null}
      {drift.data && !drift.data.versions.length ? <Empty>No sampled prediction in the last {since}.</Empty> : null}
      {drift.data?.versions.map((v) => (
        <section key={v.version} class="drift-version" data-version={v.version}>
          <h3 class="subhead">
            v{v.version} · {fmtNum(v.rows)} records of successful requests
            {v.failed ? <span class="muted small"> · {fmtNum(v.failed)} of failed requests left out</span> : null}
            {v.training_run ? <> · against the training data of run <Link to={`runs/${encodeURIComponent(v.training_run)}`} class="mono">{shortId(v.training_run)}</Link></> : null}
          </h3>
          {v.features.length ? (
            <table class="table compact drift-table">
              <thead><tr><th>Feature</th><th>Test</th><th class="num">Statistic</th><th>Drifted</th><th>Training</th><th>Live</th></tr></thead>
              <tbody>
                {v.features.map((f) => (
                  <tr key={`${f.feature}|${f.test}`} class={f.drifted ? "drifted" : ""} data-feature={f.feature} data-test={f.test} data-drifted={String(f.drifted)}>
                    <td class="strong">{f.feature}</td>
                    <td>{f.test}</td>
                    <td class="num">{f.statistic === null ? "—" : Number(f.statistic.toPrecision(3))}</td>
                    <td>{f.drifted ? <span class="chip chip-danger">drifted</span> : <span class="muted">no</span>}</td>
                    <td class="small training-dist">{f.test === "type" ? "—" : fmtDist(f.training)}</td>
                    <td class="small live-dist">{f.test === "type" ? Object.entries(f.types ?? {}).map(([t, n]) => `${fmtNum(n)} ${t}`).join(" · ") : fmtDist(f.live)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {v.notes.map((n, i) => <p key={i} class="muted small drift-note">{n}</p>)}
        </section>
      ))}
    </Card>
  );
}

function DiagnosisCard({ report }: { report: DeploymentDiagnosis }) {
  return (
    <Card title="What changed" id="deployment-diagnosis" class="diagnosis-card">
      <p class="diagnosis-headline strong">{report.headline}</p>
      {report.before || report.after ? (
        <p class="muted">
          before: {report.before ? `v${report.before.version}` : "—"}{report.before?.run_id ? <> (run <Link to={`runs/${encodeURIComponent(report.before.run_id)}`} class="mono">{shortId(report.before.run_id)}</Link>)</> : null}
          {" · "}after: {report.after ? `v${report.after.version}` : "—"}{report.after?.run_id ? <> (run <Link to={`runs/${encodeURIComponent(report.after.run_id)}`} class="mono">{shortId(report.after.run_id)}</Link>)</> : null}
        </p>
      ) : null}
      {report.changes.length ? (
        <ul class="diagnosis-changes">
          {report.changes.map((c, i) => <li key={i}><span class="chip">{c.kind}</span> {c.time ? <span class="muted small">{fmtTime(c.time)} </span> : null}{c.summary}</li>)}
        </ul>
      ) : null}
      {report.differences.length ? (
        <>
          <h3 class="subhead">What differs between the two versions' training runs</h3>
          <ul class="diagnosis-differences">
            {report.differences.map((d, i) => <li key={i}><span class="chip">{d.kind}</span> {d.summary}</li>)}
          </ul>
        </>
      ) : null}
      {report.text ? <details><summary>Full report</summary><pre class="diagnosis-text">{report.text}</pre></details> : null}
    </Card>
  );
}
