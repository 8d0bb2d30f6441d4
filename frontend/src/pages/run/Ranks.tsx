// The ranks of a distributed run (docs/distributed.md): the table on the overview (rank, host,
// state, last step, heartbeat, exit, first error; each rank's logs one click away) and a lane per
// rank on the timeline (its life, its stages, its steps, a hang, its first error, its exit).
import { useState } from "preact/hooks";
import { ApiError, get, pathSegments } from "../../api";
import { Card, ErrorBox, FINISHED } from "../../components/ui";
import { fmtAgo, fmtDuration, fmtTime, signalName } from "../../format";
import { useAsync, useInterval, useWidth } from "../../hooks";
import { Link, paths } from "../../router";
import { stageColors } from "../../theme";
import type { Buckets, EvidenceItem, RankInfo, Run, Stage, Stall } from "../../types";
import { sec } from "./attempts";

const LIVE_REFRESH_MS = 5000;
/** Lanes that also fetch the rank's stages and steps (two requests each); more ranks get their life, hang, error and exit only. */
const DETAILED_LANES = 32;

/** The ranks of ``run`` (an empty list for a run of one process), refreshed while it runs. */
export function useRanks(run: Run) {
  const running = !FINISHED.has(run.status);
  const ranks = useAsync((signal) => get<{ ranks: RankInfo[] }>(`runs/${run.id}/ranks`, undefined, signal), [run.id, run.status]);
  useInterval(() => ranks.reload(), running && (ranks.data?.ranks.length ?? 0) > 0 ? LIVE_REFRESH_MS : null);
  return ranks;
}

export function exitText(r: RankInfo): string {
  if (r.signal !== null) return signalName(r.signal);
  if (r.exit_code !== null) return `exit ${r.exit_code}`;
  return r.state === "running" || r.state === "hung" ? "—" : r.state === "lost" ? "unknown" : "—";
}

export function RankState({ state }: { state: string }) {
  return <span class={`rank-state rank-state-${state}`} data-state={state}>{state}</span>;
}

/** The ranks' table (flightlog ranks RUN in the browser). */
export function RanksCard({ run, ranks, culprit }: { run: Run; ranks: RankInfo[]; culprit?: number | null }) {
  const world = ranks.find((r) => r.world_size !== null)?.world_size ?? null;
  const launcher = ranks.find((r) => r.launcher)?.launcher ?? null;
  const missing = world !== null && ranks.length < world && ranks.length > 1
    ? Array.from({ length: world }, (_, i) => i).filter((i) => !ranks.some((r) => r.rank === i)) : [];
  return (
    <Card title={`Ranks (${ranks.length}${world !== null && world !== ranks.length ? ` of ${world}` : ""})`} id="ranks"
      actions={<span class="muted small">{launcher ? `${launcher} · ` : ""}<Link to={paths.run(run.project, run.id, "timeline")}>lanes on the timeline →</Link></span>}>
      <div class="table-wrap">
        <table class="table compact ranks-table">
          <thead><tr><th>Rank</th><th>Host</th><th class="num">PID</th><th>State</th><th class="num">Last step</th><th>Heartbeat</th><th>Exit</th><th>First error</th><th /></tr></thead>
          <tbody>
            {ranks.map((r) => (
              <tr key={`${r.attempt}-${r.rank}-${r.restart}`} data-rank={r.rank} data-state={r.state} class={r.rank === culprit ? "rank-culprit" : ""}>
                <td class="mono">{r.rank}{r.world_size !== null ? <span class="muted">/{r.world_size}</span> : null}
                  {r.rank === culprit ? <span class="chip chip-danger" title="the diagnosis names this rank as the culprit">culprit</span> : null}</td>
                <td class="mono">{r.host ?? "—"}</td>
                <td class="num mono">{r.pid ?? "—"}</td>
                <td><RankState state={r.state} /></td>
                <td class="num">{r.last_step !== null ? r.last_step : <span class="muted" title="steps are known for ranks that call flightlog.init() and log">—</span>}</td>
                <td class="muted small" title={r.last_heartbeat ?? ""}>{r.last_heartbeat ? fmtAgo(r.last_heartbeat) : "—"}</td>
                <td class="rank-exit">{exitText(r)}</td>
                <td class="rank-error mono small">{r.first_error ? <span title={r.first_error.message}>{r.first_error.message}</span> : <span class="muted">—</span>}</td>
                <td><Link class="small" to={paths.run(run.project, run.id, "logs", { rank: String(r.rank) })}>logs</Link></td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {missing.length ? <p class="muted small" id="ranks-missing">Never seen: rank{missing.length > 1 ? "s" : ""} {missing.slice(0, 20).join(", ")}{missing.length > 20 ? ", …" : ""} (no flightlog.init(), or their records have not arrived).</p> : null}
    </Card>
  );
}

// ── lanes on the timeline ────────────────────────────────────────────────────────────────────

const LABEL_W = 150;
const LANE_H = 40;
const AXIS_H = 24;

interface LaneData {
  stages: Stage[];
  steps: { step: number; time: number }[];
}

/** One lane per rank, on one time axis: its life (start to end), the spans of its own stages,
 *  a tick per step it logged, a hang (its watch said it stalled) as a hatched band, its first
 *  error and its exit as markers. Hover anything for details. */
export function RankLanes({ run, ranks }: { run: Run; ranks: RankInfo[] }) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const stalls = useAsync((signal) => get<{ evidence: EvidenceItem<Stall>[] }>(`runs/${run.id}/evidence`, { kind: "stall" }, signal), [run.id, run.status, ranks.length]);
  const metric = stepMetric(run);
  const detailed = ranks.slice(0, DETAILED_LANES);
  const lanes = useAsync(async (signal) => {
    const out: Record<number, LaneData> = {};
    await Promise.all(detailed.map(async (r) => {
      const [st, steps] = await Promise.all([
        get<{ stages: Stage[] }>(`runs/${run.id}/stages`, { rank: r.rank }, signal),
        metric ? get<Buckets>(`runs/${run.id}/metrics/${pathSegments(metric)}`, { rank: r.rank, buckets: 200 }, signal).catch((err) => {
          if (err instanceof ApiError && err.status === 404) return null; // this rank logged no point of it
          throw err;
        }) : Promise.resolve(null),
      ]);
      out[r.rank] = {
        stages: st.stages,
        steps: steps ? steps.step.map((s, i) => ({ step: s, time: Date.parse(steps.time[i]) / 1000 })).filter((p) => Number.isFinite(p.time)) : [],
      };
    }));
    return out;
  }, [run.id, run.status, ranks.map((r) => `${r.rank}:${r.state}:${r.last_step}`).join(",")]);
  const [hover, setHover] = useState<string | null>(null);

  const byRank = new Map<number, Stall[]>();
  for (const e of stalls.data?.evidence ?? []) {
    const rank = e.data?.rank;
    if (typeof rank === "number") byRank.set(rank, [...(byRank.get(rank) ?? []), e.data]);
  }
  const now = Date.now() / 1000;
  const end = (r: RankInfo) => sec(r.ended) ?? (FINISHED.has(run.status) ? sec(r.last_heartbeat) ?? sec(run.ended) : now) ?? now;
  const times: number[] = [];
  for (const r of ranks) {
    const s = sec(r.started);
    if (s !== null) times.push(s);
    times.push(end(r));
  }
  for (const list of byRank.values()) for (const s of list) times.push(s.time);
  const lo = Math.min(...times); // the earliest rank's start: a launcher's own start-up is not the ranks' time
  const hi = Math.max(...times, lo + 1);
  const plotW = Math.max(240, width - LABEL_W - 40);
  const x = (v: number) => LABEL_W + ((v - lo) / Math.max(1e-9, hi - lo)) * plotW;
  const height = AXIS_H + ranks.length * LANE_H + 6;
  const stageNames = [...new Set(Object.values(lanes.data ?? {}).flatMap((l) => l.stages.map((s) => s.name)))].sort();
  const color = stageColors(stageNames);

  return (
    <Card title="Ranks" id="rank-lanes" actions={<span class="muted small">a lane per rank · {metric ? `ticks: steps of ${metric}` : "no metric logged: no step ticks"} · hover for details</span>}>
      <div ref={ref}>
        {stalls.error ? <ErrorBox error={stalls.error} what="the ranks' stalls" /> : null}
        {lanes.error ? <ErrorBox error={lanes.error} what="the ranks' stages and steps" /> : null}
        <svg class="gantt rank-lanes" width={LABEL_W + plotW + 20} height={height} role="img" aria-label="a lane per rank">
          <defs>
            <pattern id="hang-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">
              <rect width="6" height="6" class="rank-hang-fill" />
              <line x1="0" y1="0" x2="0" y2="6" class="rank-hang-line" />
            </pattern>
          </defs>
          {axisTicks(lo, hi, Math.max(2, Math.floor(plotW / 110))).map((v) => (
            <g key={v}>
              <line x1={x(lo + v)} x2={x(lo + v)} y1={AXIS_H - 6} y2={height} class="gantt-grid" />
              {x(lo + v) < LABEL_W + plotW - 30 ? <text x={x(lo + v) + 3} y={AXIS_H - 10} class="gantt-tick">{v === 0 ? "0" : `+${fmtDuration(v)}`}</text> : null}
            </g>
          ))}
          {ranks.map((r, i) => {
            const y = AXIS_H + i * LANE_H;
            const start = sec(r.started) ?? lo;
            const stop = end(r);
            const data = lanes.data?.[r.rank];
            const mine = byRank.get(r.rank) ?? [];
            const error = sec(r.first_error?.time);
            const exited = sec(r.ended);
            return (
              <g key={`${r.attempt}-${r.rank}-${r.restart}`} class="gantt-row rank-lane" data-rank={r.rank} data-state={r.state}>
                {i % 2 ? <rect x={0} y={y} width={LABEL_W + plotW + 16} height={LANE_H} class="gantt-stripe" /> : null}
                <text x={6} y={y + 15} class="gantt-label">rank {r.rank}{r.host ? <tspan class="gantt-detail"> · {r.host}</tspan> : null}</text>
                <text x={6} y={y + 30} class={`gantt-detail rank-lane-state rank-state-${r.state}`}>{r.state}{r.state !== "running" && r.state !== "hung" ? ` · ${exitText(r)}` : ""}</text>
                <rect x={x(start)} y={y + 17} width={Math.max(2, x(stop) - x(start))} height={6} rx={3} class="rank-life">
                  <title>rank {r.rank}: {fmtTime(r.started, { millis: true, date: false })} – {r.ended ? fmtTime(r.ended, { millis: true, date: false }) : "now"} ({fmtDuration(stop - start)})</title>
                </rect>
                {(data?.stages ?? []).flatMap((s) => s.spans.map((sp, k) => {
                  const a = Date.parse(sp.start) / 1000;
                  const b = Date.parse(sp.end) / 1000;
                  return (
                    <rect key={`${s.name}${k}`} x={x(a)} y={y + 5} width={Math.max(1.5, x(b) - x(a))} height={9} fill={color(s.name)} class="rank-stage" data-stage={s.name}>
                      <title>rank {r.rank} · {s.name}: {fmtDuration(sp.duration)} at {fmtTime(sp.start, { millis: true, date: false })}</title>
                    </rect>
                  );
                }))}
                {(data?.steps ?? []).map((p) => (
                  <line key={`s${p.step}`} x1={x(p.time)} x2={x(p.time)} y1={y + 26} y2={y + 34} class="rank-step" data-step={p.step}>
                    <title>rank {r.rank} · step {p.step} at {fmtTime(p.time * 1000, { millis: true, date: false })}</title>
                  </line>
                ))}
                {hangBands(mine, stop).map((h, k) => (
                  <rect key={`h${k}`} x={x(h.from)} y={y + 3} width={Math.max(3, x(h.to) - x(h.from))} height={LANE_H - 6} fill="url(#hang-hatch)" class="rank-hang"
                    onMouseEnter={() => setHover(`rank ${r.rank}: no progress from ${fmtTime(h.from * 1000, { millis: true, date: false })} for ${fmtDuration(h.to - h.from)}${h.open ? " (still stalled)" : ""}`)} onMouseLeave={() => setHover(null)}>
                    <title>rank {r.rank} hung: no progress from {fmtTime(h.from * 1000, { millis: true, date: false })} for {fmtDuration(h.to - h.from)}{h.open ? " (stalled now)" : " (then resumed or ended)"}{h.threshold ? ` · threshold ${fmtDuration(h.threshold)}` : ""}</title>
                  </rect>
                ))}
                {error !== null ? (
                  <circle cx={x(error)} cy={y + 9} r={5} class="rank-first-error">
                    <title>rank {r.rank}'s first error at {fmtTime(r.first_error!.time, { millis: true, date: false })}: {r.first_error!.message}</title>
                  </circle>
                ) : null}
                {exited !== null ? (
                  <path d={`M${x(exited)} ${y + 16} l6 7 l-6 7 l-6 -7 z`} class={`rank-exit-mark rank-state-${r.state}`}>
                    <title>rank {r.rank} {r.state} at {fmtTime(r.ended, { millis: true, date: false })}: {exitText(r)}{r.end_reason ? ` (${r.end_reason})` : ""}</title>
                  </path>
                ) : null}
              </g>
            );
          })}
        </svg>
        <p class="muted small rank-lanes-legend">
          <span class="legend-swatch rank-life-swatch" /> alive · <span class="legend-swatch rank-stage-swatch" /> its stages · <span class="legend-tick" /> a step ·{" "}
          <span class="legend-swatch rank-hang-swatch" /> no progress (hang) · <span class="legend-dot" /> first error · <span class="legend-diamond" /> exit
          {ranks.length > DETAILED_LANES ? ` · stages and steps drawn for the first ${DETAILED_LANES} ranks` : ""}
          {hover ? <span class="rank-hover"> · {hover}</span> : null}
        </p>
      </div>
    </Card>
  );
}

/** The metric whose steps the lanes tick: the loss if the run logs one, else its first metric. */
function stepMetric(run: Run): string | null {
  const names = Object.keys(run.metric_summaries ?? run.metrics ?? {});
  return names.find((n) => /(^|\/)loss$/.test(n)) ?? names.find((n) => /loss/.test(n)) ?? names[0] ?? null;
}

/** Stretches without progress from a rank's stall evidence: each `stalled` until the next
 *  `resumed` (or the rank's end, or now). */
function hangBands(stalls: Stall[], stop: number): { from: number; to: number; open: boolean; threshold: number | null }[] {
  const out: { from: number; to: number; open: boolean; threshold: number | null }[] = [];
  let open: Stall | null = null;
  for (const s of [...stalls].sort((a, b) => a.time - b.time)) {
    if (s.state === "stalled" && !open) open = s;
    else if (s.state === "resumed" && open) {
      out.push({ from: open.since ?? open.time, to: s.time, open: false, threshold: open.threshold_s ?? null });
      open = null;
    }
  }
  if (open) out.push({ from: open.since ?? open.time, to: Math.max(stop, open.time), open: true, threshold: open.threshold_s ?? null });
  return out;
}

const STEPS = [0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400];

function axisTicks(lo: number, hi: number, n: number): number[] {
  const span = hi - lo;
  if (!(span > 0)) return [0];
  const step = STEPS.find((s) => span / s <= n) ?? span / n;
  const out: number[] = [];
  for (let v = 0; v <= span + 1e-9 && out.length < 100; v += step) out.push(v);
  return out;
}
