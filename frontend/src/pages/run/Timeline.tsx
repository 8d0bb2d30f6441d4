// Timeline: a Gantt view of where the run's time went: queue wait, startup, each stage (per-batch
// stages aggregated: one bar over their span, filled to their share of it), checkpoints,
// evaluation and the completion tail.
import { get } from "../../api";
import { Card, Empty, ErrorBox, FINISHED, Loading } from "../../components/ui";
import { fmtDuration, fmtTime } from "../../format";
import { useAsync, useWidth } from "../../hooks";
import { stageColors } from "../../theme";
import type { Artifact, Run, Stage } from "../../types";

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
}

const t = (iso: string | null | undefined) => (iso ? Date.parse(iso) / 1000 : null);

export function buildRows(run: Run, stages: Stage[], artifacts: Artifact[]): Row[] {
  const tl = run.timeline ?? {};
  const rows: Row[] = [];
  const queued = t(run.queued);
  const started = t(run.started);
  const procStart = t(tl.process_start) ?? started;
  const firstStep = t(tl.first_metric);
  const ended = t(run.ended) ?? t(tl.process_end) ?? (FINISHED.has(run.status) ? t(run.updated) : Date.now() / 1000);
  if (queued !== null && started !== null && started > queued) {
    rows.push({ label: "queue wait", kind: "queue", detail: fmtDuration(started - queued), bars: [{ start: queued, end: started, color: "#94a3b8", title: `queued ${fmtDuration(started - queued)} before starting` }] });
  }
  if (procStart !== null && firstStep !== null && firstStep >= procStart) {
    rows.push({ label: "startup", kind: "startup", detail: fmtDuration(firstStep - procStart), bars: [{ start: procStart, end: firstStep, color: "#a78bfa", title: `startup: ${fmtDuration(firstStep - procStart)} from process start to the first step` }] });
  }
  const stageColor = stageColors(stages.map((s) => s.name));
  const sorted = stages.slice().sort((a, b) => (t(a.first_start) ?? 0) - (t(b.first_start) ?? 0));
  for (const s of sorted) {
    const color = stageColor(s.name);
    const fs = t(s.first_start);
    const le = t(s.last_end);
    if (fs === null || le === null) continue;
    const attempt = /^attempt \d+$/.test(s.name);
    if (s.count <= PER_BATCH && s.spans.length >= s.count) {
      rows.push({
        label: s.name, kind: attempt ? "attempt" : "stage",
        detail: s.count > 1 ? `${s.count}× · ${fmtDuration(s.total)}` : fmtDuration(s.total),
        bars: s.spans.map((sp) => ({
          start: Date.parse(sp.start) / 1000, end: Date.parse(sp.end) / 1000, color,
          title: `${s.name}: ${fmtDuration(sp.duration)} (${fmtTime(sp.start, { millis: true, date: false })} – ${fmtTime(sp.end, { millis: true, date: false })})${sp.attrs ? " " + JSON.stringify(sp.attrs) : ""}`,
        })),
      });
    } else {
      const window = Math.max(1e-9, le - fs);
      const share = Math.min(1, s.total / window);
      rows.push({
        label: s.name, kind: "aggregated",
        detail: `${s.count.toLocaleString()}× · ${fmtDuration(s.total)} · ${Math.round(share * 100)}%`,
        bars: [{
          start: fs, end: le, color, share,
          ticks: s.spans.map((sp) => [Date.parse(sp.start) / 1000, Date.parse(sp.end) / 1000]),
          title: `${s.name}: ${s.count.toLocaleString()} times, ${fmtDuration(s.total)} in all (mean ${fmtDuration(s.mean)}, max ${fmtDuration(s.max)}): ${Math.round(share * 100)}% of the ${fmtDuration(window)} between its first start and last end`,
        }],
      });
    }
  }
  const ckpts = artifacts.filter((a) => a.kind === "checkpoint" && a.role === "output");
  if (ckpts.length && !stages.some((s) => /checkpoint/i.test(s.name))) {
    rows.push({
      label: "checkpoints", kind: "checkpoint", detail: `${ckpts.length}`,
      bars: ckpts.map((a) => ({ start: Date.parse(a.time) / 1000, end: Date.parse(a.time) / 1000, color: stageColor("checkpoint"), marker: true, title: `checkpoint ${a.path}${a.step !== null ? ` at step ${a.step}` : ""}` })),
    });
  }
  const work = stages.filter((s) => !/^attempt \d+$/.test(s.name) && !/checkpoint|eval|save|upload/i.test(s.name));
  const lastWork = Math.max(t(tl.last_metric) ?? -Infinity, ...work.map((s) => t(s.last_end) ?? -Infinity));
  const tailEnd = t(tl.process_end) ?? ended;
  if (Number.isFinite(lastWork) && tailEnd !== null && FINISHED.has(run.status) && tailEnd > lastWork) {
    rows.push({ label: "completion tail", kind: "tail", detail: fmtDuration(tailEnd - lastWork), bars: [{ start: lastWork, end: tailEnd, color: "#f59e0b", title: `completion tail: ${fmtDuration(tailEnd - lastWork)} from the last training step to the end (checkpoints, evaluation, uploads, exit)` }] });
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
  return (
    <div class="timeline-tab" ref={ref}>
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
  return (
    <>
      {!rows.length ? <Empty>No stages or timings recorded. Mark phases with <code>with run.stage("data_loading"):</code>.</Empty> : (
        <Card title="Where the time went" actions={<span class="muted small">{total !== null ? `run took ${fmtDuration(total)}` : "running"} · hover a bar for details</span>}>
          <svg class="gantt" width={LABEL_W + plotW + 12} height={height} role="img" aria-label="timeline of the run">
            {ticks(lo, hi, Math.max(2, Math.floor(plotW / 110))).map((v) => (
              <g key={v}>
                <line x1={x(lo + v)} x2={x(lo + v)} y1={AXIS_H - 6} y2={height} class="gantt-grid" />
                {x(lo + v) < LABEL_W + plotW - 30 ? <text x={x(lo + v) + 3} y={AXIS_H - 10} class="gantt-tick">{v === 0 ? "0" : `+${fmtDuration(v)}`}</text> : null}
              </g>
            ))}
            {rows.map((r, i) => {
              const y = AXIS_H + i * ROW_H;
              return (
                <g key={r.label + i} class={`gantt-row gantt-${r.kind}`} data-row={r.label}>
                  {i % 2 ? <rect x={0} y={y} width={LABEL_W + plotW + 8} height={ROW_H} class="gantt-stripe" /> : null}
                  <text x={6} y={y + 12} class="gantt-label">{r.label.length > 24 ? r.label.slice(0, 23) + "…" : r.label}</text>
                  <text x={6} y={y + 24} class="gantt-detail">{r.detail}</text>
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
                  <td class="num">{run.duration ? `${((s.total / run.duration) * 100).toFixed(1)}%` : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      ) : null}
    </>
  );
}
