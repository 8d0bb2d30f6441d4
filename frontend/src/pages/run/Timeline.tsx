// Timeline: a Gantt view of where the run's time went: queue wait, startup, each stage (per-batch
// stages aggregated: one bar over their span, filled to their share of it), checkpoints,
// evaluation and the completion tail; above it, the run's goodput (Goodput.tsx).
import { get } from "../../api";
import { Card, Empty, ErrorBox, FINISHED, Loading } from "../../components/ui";
import { fmtDuration, fmtTime } from "../../format";
import { useAsync, useWidth } from "../../hooks";
import { stageColors } from "../../theme";
import type { Artifact, Run, Stage } from "../../types";
import { GoodputCard } from "./Goodput";
import { RankLanes, useRanks } from "./Ranks";
import { type Attempt, attemptAt, attemptsOf, clock, exitNote, isAttemptStage, sec, spanAttempt, spanTimes } from "./attempts";

const PER_BATCH = 50;
const LABEL_W = 190;
const ROW_H = 28;
const AXIS_H = 26;

interface Bar {
  start: number;
  end: number;
  color: string;
  title: string;
  share?: number; // aggregated: fraction of [start, end] actually spent in the stage
  ticks?: [number, number][];
  marker?: boolean;
}

interface Row {
  label: string;
  detail: string;
  bars: Bar[];
  kind: string;
  attempt?: number; // the attempt the row belongs to, when the run had several
}

const t = sec;

/** The rows of the Gantt chart. A run with several attempts gets one group per attempt (its
 *  band, startup, stages and checkpoints), in attempt order, so nothing of attempt 1 is drawn as
 *  if it happened in attempt 2. */
export function buildRows(run: Run, stages: Stage[], artifacts: Artifact[]): Row[] {
  const tl = run.timeline ?? {};
  const rows: Row[] = [];
  const queued = t(run.queued);
  const attempts = attemptsOf(run, stages);
  const firstStart = attempts.length > 1 ? attempts[0].start : t(run.started);
  const ended = t(run.ended) ?? t(tl.process_end) ?? (FINISHED.has(run.status) ? t(run.updated) : Date.now() / 1000);
  if (queued !== null && firstStart !== null && firstStart > queued) {
    rows.push({ label: "queue wait", kind: "queue", detail: fmtDuration(firstStart - queued), bars: [{ start: queued, end: firstStart, color: "#94a3b8", title: `queued ${fmtDuration(firstStart - queued)} before starting` }] });
  }
  const stageColor = stageColors(stages.map((s) => s.name));
  const sorted = stages.slice().sort((a, b) => (t(a.first_start) ?? 0) - (t(b.first_start) ?? 0));
  const ckpts = artifacts.filter((a) => a.kind === "checkpoint" && a.role === "output");
  const checkpointStage = stages.some((s) => /checkpoint/i.test(s.name));
  const work = stages.filter((s) => !isAttemptStage(s.name) && !/checkpoint|eval|save|upload/i.test(s.name));
  const firstStep = t(tl.first_metric);

  if (attempts.length <= 1) {
    const procStart = t(tl.process_start) ?? t(run.started);
    if (procStart !== null && firstStep !== null && firstStep >= procStart) rows.push(startupRow(procStart, firstStep));
    rows.push(...stageRows(sorted, stageColor));
    if (ckpts.length && !checkpointStage) rows.push(checkpointRow(ckpts, stageColor));
    const lastWork = Math.max(t(tl.last_metric) ?? -Infinity, ...work.map((s) => t(s.last_end) ?? -Infinity));
    const tailEnd = t(tl.process_end) ?? ended;
    if (Number.isFinite(lastWork) && tailEnd !== null && FINISHED.has(run.status) && tailEnd > lastWork) rows.push(tailRow(lastWork, tailEnd));
    return rows;
  }

  const inAttempts = sorted.filter((s) => !isAttemptStage(s.name)); // each attempt has its own row instead
  for (const a of attempts) {
    const group: Row[] = [];
    const exit = exitNote(a) || (a.running ? " · running" : "");
    group.push({
      label: `attempt ${a.n}`, kind: "attempt", detail: `${fmtDuration(a.end - a.start)}${exit}`,
      bars: [{ start: a.start, end: a.end, color: stageColor(`attempt ${a.n}`), title: `attempt ${a.n}: ${clock(a.start)} – ${clock(a.end)}, ${fmtDuration(a.end - a.start)}${exit}` }],
    });
    if (firstStep !== null && attemptAt(attempts, firstStep) === a) group.push(startupRow(a.start, firstStep, a.n));
    group.push(...stageRows(inAttempts, stageColor, a));
    const mine = ckpts.filter((c) => attemptAt(attempts, t(c.time)) === a);
    if (mine.length && !checkpointStage) group.push(checkpointRow(mine, stageColor));
    const last = a === attempts[attempts.length - 1];
    if (last && FINISHED.has(run.status)) {
      const inside = (v: number | null) => (v !== null && attemptAt(attempts, v) === a ? v : -Infinity);
      const lastWork = Math.max(inside(t(tl.last_metric)), ...work.flatMap((s) => s.spans.filter((sp) => spanAttempt(sp) === a.n).map((sp) => Date.parse(sp.end) / 1000)));
      if (Number.isFinite(lastWork) && a.end > lastWork) group.push(tailRow(lastWork, a.end));
    }
    rows.push(...group.map((r) => ({ ...r, attempt: a.n })));
  }
  return rows;
}

function startupRow(from: number, firstStep: number, attempt?: number): Row {
  const where = attempt ? `the start of attempt ${attempt}` : "process start";
  return { label: "startup", kind: "startup", detail: fmtDuration(firstStep - from), bars: [{ start: from, end: firstStep, color: "#a78bfa", title: `startup: ${fmtDuration(firstStep - from)} from ${where} to the first step` }] };
}

function checkpointRow(ckpts: Artifact[], stageColor: (n: string) => string): Row {
  return {
    label: "checkpoints", kind: "checkpoint", detail: `${ckpts.length}`,
    bars: ckpts.map((a) => ({ start: Date.parse(a.time) / 1000, end: Date.parse(a.time) / 1000, color: stageColor("checkpoint"), marker: true, title: `checkpoint ${a.path}${a.step !== null ? ` at step ${a.step}` : ""}` })),
  };
}

function tailRow(lastWork: number, end: number): Row {
  return { label: "completion tail", kind: "tail", detail: fmtDuration(end - lastWork), bars: [{ start: lastWork, end, color: "#f59e0b", title: `completion tail: ${fmtDuration(end - lastWork)} from the last training step to the end (checkpoints, evaluation, uploads, exit)` }] };
}

/** A row per stage, in the order given; `within` (an attempt) keeps only the spans of that attempt,
 *  and limits a per-batch stage's bar to them (its counts cover every attempt, so no share is drawn). */
function stageRows(stages: Stage[], stageColor: (n: string) => string, within?: Attempt): Row[] {
  const rows: Row[] = [];
  for (const s of stages) {
    const color = stageColor(s.name);
    const fs = t(s.first_start);
    const le = t(s.last_end);
    if (fs === null || le === null) continue;
    const spans = within ? s.spans.filter((sp) => spanAttempt(sp) === within.n) : s.spans;
    if (s.count <= PER_BATCH && s.spans.length >= s.count) {
      if (!spans.length) continue;
      const total = spans.reduce((sum, sp) => sum + sp.duration, 0);
      rows.push({
        label: s.name, kind: isAttemptStage(s.name) ? "attempt" : "stage",
        detail: spans.length > 1 ? `${spans.length}× · ${fmtDuration(total)}` : fmtDuration(total),
        bars: spans.map((sp) => ({
          start: Date.parse(sp.start) / 1000, end: Date.parse(sp.end) / 1000, color,
          title: `${s.name}${within ? ` (attempt ${within.n})` : ""}: ${fmtDuration(sp.duration)} (${fmtTime(sp.start, { millis: true, date: false })} – ${fmtTime(sp.end, { millis: true, date: false })})${sp.attrs ? " " + JSON.stringify(sp.attrs) : ""}`,
        })),
      });
    } else if (!within) {
      const window = Math.max(1e-9, le - fs);
      const share = Math.min(1, s.total / window);
      rows.push({
        label: s.name, kind: "aggregated",
        detail: `${s.count.toLocaleString()}× · ${fmtDuration(s.total)} · ${Math.round(share * 100)}%`,
        bars: [{
          start: fs, end: le, color, share,
          ticks: s.spans.map(spanTimes),
          title: `${s.name}: ${s.count.toLocaleString()} times, ${fmtDuration(s.total)} in all (mean ${fmtDuration(s.mean)}, max ${fmtDuration(s.max)}): ${Math.round(share * 100)}% of the ${fmtDuration(window)} between its first start and last end`,
        }],
      });
    } else if (spans.length) {
      const kept = spans.map(spanTimes);
      const lo = Math.max(within.start, Math.min(...kept.map(([start]) => start), fs >= within.start ? fs : Infinity));
      const hi = Math.min(within.end, Math.max(...kept.map(([, end]) => end), le <= within.end ? le : -Infinity));
      rows.push({
        label: s.name, kind: "aggregated",
        detail: `${spans.length.toLocaleString()} kept of ${s.count.toLocaleString()}×`,
        bars: [{
          start: lo, end: hi, color, share: 0,
          ticks: kept,
          title: `${s.name} in attempt ${within.n}: ${spans.length} kept spans; ${s.count.toLocaleString()} times, ${fmtDuration(s.total)} over all attempts (the Stages table)`,
        }],
      });
    }
  }
  return rows;
}

const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400];

function ticks(lo: number, hi: number, n: number): number[] {
  const span = hi - lo;
  if (!(span > 0)) return [0];
  const step = STEPS.find((s) => span / s <= n) ?? span / n;
  const out: number[] = [];
  for (let v = 0; v <= span + 1e-9 && out.length < 100; v += step) out.push(v);
  return out;
}

export function Timeline({ run }: { run: Run }) {
  const stages = useAsync((signal) => get<{ stages: Stage[] }>(`runs/${run.id}/stages`, undefined, signal), [run.id, run.status]);
  const arts = useAsync((signal) => get<{ artifacts: Artifact[] }>(`runs/${run.id}/artifacts`, undefined, signal), [run.id, run.status]);
  const [ref, width] = useWidth<HTMLDivElement>();
  const ranks = useRanks(run);
  return (
    <div class="timeline-tab" ref={ref}>
      {/* a serving replica's life is its traffic, not training hours: no goodput to show */}
      {FINISHED.has(run.status) && run.kind !== "serving" ? <GoodputCard run={run} /> : null}
      {ranks.data?.ranks.length ? <RankLanes run={run} ranks={ranks.data.ranks} /> : null}
      {stages.error ? <ErrorBox error={stages.error} what="stages" /> : !stages.data || (!arts.data && !arts.error) ? <Loading what="the timeline" /> : (
        <TimelineBody run={run} stages={stages.data.stages} artifacts={arts.data?.artifacts ?? []} width={width} />
      )}
    </div>
  );
}

function TimelineBody({ run, stages, artifacts, width }: { run: Run; stages: Stage[]; artifacts: Artifact[]; width: number }) {
  const rows = buildRows(run, stages, artifacts);
  const all = rows.flatMap((r) => r.bars.flatMap((b) => [b.start, b.end]));
  const lo = Math.min(...all, t(run.queued) ?? Infinity, t(run.started) ?? Infinity);
  const hi = Math.max(...all);
  const plotW = Math.max(200, width - LABEL_W - 60); // the card's padding and border, and room for the last label
  const x = (v: number) => LABEL_W + ((v - lo) / Math.max(1e-9, hi - lo)) * plotW;
  const height = AXIS_H + rows.length * ROW_H + 8;
  const total = FINISHED.has(run.status) ? run.duration : null;
  const stageColor = stageColors(stages.map((s) => s.name));
  const attempts = attemptsOf(run, stages);
  // with several attempts, the table's shares are of the time from the first start to the last end
  const whole = attempts.length > 1 ? attempts[attempts.length - 1].end - attempts[0].start : run.duration;
  // one band per attempt behind its rows (rows carry an attempt only when there are several)
  const bands = attempts.map((a) => ({ a, first: rows.findIndex((r) => r.attempt === a.n), last: rows.findLastIndex((r) => r.attempt === a.n) }))
    .filter((b) => b.first >= 0);
  return (
    <>
      {!rows.length ? <Empty>No stages or timings recorded. Mark phases with <code>with run.stage("data_loading"):</code>.</Empty> : (
        <Card title="Where the time went" actions={<span class="muted small">{attempts.length > 1 ? `${attempts.length} attempts over ${fmtDuration(whole)} · ` : ""}{total !== null ? `run took ${fmtDuration(total)}` : "running"} · hover a bar for details</span>}>
          <svg class="gantt" width={LABEL_W + plotW + 12} height={height} role="img" aria-label="timeline of the run">
            {ticks(lo, hi, Math.max(2, Math.floor(plotW / 110))).map((v) => (
              <g key={v}>
                <line x1={x(lo + v)} x2={x(lo + v)} y1={AXIS_H - 6} y2={height} class="gantt-grid" />
                {x(lo + v) < LABEL_W + plotW - 30 ? <text x={x(lo + v) + 3} y={AXIS_H - 10} class="gantt-tick">{v === 0 ? "0" : `+${fmtDuration(v)}`}</text> : null}
              </g>
            ))}
            {rows.map((_r, i) => (i % 2 ? <rect key={`s${i}`} x={0} y={AXIS_H + i * ROW_H} width={LABEL_W + plotW + 8} height={ROW_H} class="gantt-stripe" /> : null))}
            {bands.map(({ a, first, last }) => (
              <g key={`band${a.n}`} class="gantt-attempt-band" data-attempt={a.n}>
                <rect x={x(a.start)} y={AXIS_H + first * ROW_H + 1} width={Math.max(2, x(a.end) - x(a.start))} height={(last - first + 1) * ROW_H - 2}
                  rx={4} fill={stageColor(`attempt ${a.n}`)} opacity={0.09} />
                <rect x={2} y={AXIS_H + first * ROW_H + 3} width={3} height={(last - first + 1) * ROW_H - 6} rx={1.5} fill={stageColor(`attempt ${a.n}`)} />
              </g>
            ))}
            {rows.map((r, i) => {
              const y = AXIS_H + i * ROW_H;
              const indent = r.attempt === undefined ? 6 : r.kind === "attempt" ? 10 : 20;
              const label = indent > 10 ? 22 : 24; // characters that fit before the bars
              return (
                <g key={r.label + i} class={`gantt-row gantt-${r.kind}`} data-row={r.label} data-attempt={r.attempt}>
                  <text x={indent} y={y + 12} class="gantt-label">{r.label.length > label ? r.label.slice(0, label - 1) + "…" : r.label}</text>
                  <text x={indent} y={y + 24} class="gantt-detail">{r.detail}</text>
                  {r.bars.map((b, j) => {
                    const x0 = x(b.start);
                    const w = Math.max(b.marker ? 0 : 2, x(b.end) - x0);
                    if (b.marker) {
                      return (
                        <path key={j} d={`M${x0} ${y + 6} l6 8 l-6 8 l-6 -8 z`} fill={b.color} class="gantt-marker"><title>{b.title}</title></path>
                      );
                    }
                    if (b.share !== undefined) {
                      return (
                        <g key={j}>
                          <rect x={x0} y={y + 6} width={w} height={ROW_H - 12} rx={3} fill={b.color} opacity={0.22} />
                          {(b.ticks ?? []).map(([s, e], k) => (
                            <rect key={k} x={x(s)} y={y + 6} width={Math.max(1, x(e) - x(s))} height={ROW_H - 12} fill={b.color} opacity={0.5} />
                          ))}
                          <rect x={x0} y={y + ROW_H - 9} width={Math.max(1, w * b.share)} height={3} fill={b.color} />
                          <rect x={x0} y={y + 6} width={w} height={ROW_H - 12} rx={3} fill="transparent" stroke={b.color} class="gantt-bar"><title>{b.title}</title></rect>
                        </g>
                      );
                    }
                    return <rect key={j} x={x0} y={y + 6} width={w} height={ROW_H - 12} rx={3} fill={b.color} class="gantt-bar"><title>{b.title}</title></rect>;
                  })}
                </g>
              );
            })}
          </svg>
          <p class="muted small">Per-batch stages are drawn as one outlined bar from their first start to their last end; the strip along the bottom of the bar is their share of that time, darker ticks are the spans kept as samples.</p>
        </Card>
      )}
      {stages.length ? (
        <Card title="Stages">
          <table class="table compact stage-table">
            <thead><tr><th>Stage</th><th class="num">Count</th><th class="num">Total</th><th class="num">Mean</th><th class="num">Min</th><th class="num">Max</th><th class="num">Share of run</th></tr></thead>
            <tbody>
              {stages.map((s) => (
                <tr key={s.name} data-stage={s.name}>
                  <td><span class="swatch" style={{ background: stageColor(s.name) }} /> {s.name}</td>
                  <td class="num">{s.count.toLocaleString()}</td>
                  <td class="num">{fmtDuration(s.total)}</td>
                  <td class="num">{fmtDuration(s.mean)}</td>
                  <td class="num">{fmtDuration(s.min)}</td>
                  <td class="num">{fmtDuration(s.max)}</td>
                  <td class="num">{whole ? `${((s.total / whole) * 100).toFixed(1)}%` : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      ) : null}
    </>
  );
}
