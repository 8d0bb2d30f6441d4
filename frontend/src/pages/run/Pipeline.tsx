// A pipeline run's DAG: steps in columns by depth, coloured by status, arrows from each step to
// the steps that need it. A click on a step opens its run (the latest attempt, or the run a
// cache hit reused). Below it, why each step ran again although it had succeeded before (which
// part of its cache key changed), and every attempt of every step across retries and resumes.
import { get } from "../../api";
import { ErrorBox, FINISHED, Loading } from "../../components/ui";
import { fmtDuration, fmtTime, shortId } from "../../format";
import { useAsync, useInterval } from "../../hooks";
import { Link, navigate, paths } from "../../router";
import type { Run } from "../../types";

export interface PipelineStep {
  name: string;
  status: string;
  kind: string;
  run: string | null;
  cached_from: string | null;
  reason: string | null;
  duration: number | null;
  needs: string[];
  attempts: StepAttempt[];
  pipeline_attempt: number;
  cache_miss?: CacheMiss | null; // why it ran although an earlier run of it succeeded
}

export interface CacheChange {
  part: string; // input, param, commit, source, command, function, gate, outputs, no_cache
  name: string | null;
  old: unknown;
  new: unknown;
  text: string;
}

export interface CacheMiss {
  previous_run: string;
  changes: CacheChange[];
}

export interface StepAttempt {
  number: number;
  run: string;
  status: string;
  pipeline_attempt?: number;
  category?: string | null;
  started?: string | null;
  duration?: number | null;
}

export interface PipelineView {
  run: string;
  name: string;
  status: string;
  attempt: number;
  started?: string | null; // the original start, across resumes
  attempt_started?: string | null;
  steps: PipelineStep[];
}

const W = 240; // room for "succeeded · 1.2 s · 2 attempts · gate"
const H = 54;
const GAP_X = 70;
const GAP_Y = 22;

/** Column of each step: the longest chain of dependencies before it. */
function depths(steps: PipelineStep[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of steps) { // steps arrive in dependency order
    out.set(s.name, s.needs.length ? Math.max(...s.needs.map((n) => (out.get(n) ?? 0) + 1)) : 0);
  }
  return out;
}

export function Pipeline({ run }: { run: Run }) {
  const pipeline = useAsync((signal) => get<PipelineView>(`runs/${encodeURIComponent(run.id)}/pipeline`, undefined, signal), [run.id, run.status]);
  useInterval(() => pipeline.reload(), FINISHED.has(run.status) ? null : 2000);

  if (pipeline.error) return <ErrorBox error={pipeline.error} what="the pipeline" />;
  const view = pipeline.data;
  if (!view) return <Loading what="the pipeline" />;

  const depth = depths(view.steps);
  const rows = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number }>();
  for (const s of view.steps) {
    const d = depth.get(s.name) ?? 0;
    const r = rows.get(d) ?? 0;
    rows.set(d, r + 1);
    pos.set(s.name, { x: 10 + d * (W + GAP_X), y: 10 + r * (H + GAP_Y) });
  }
  const width = 20 + (Math.max(0, ...depth.values()) + 1) * (W + GAP_X) - GAP_X;
  const height = 20 + Math.max(1, ...rows.values()) * (H + GAP_Y) - GAP_Y;
  const open = (s: PipelineStep) => s.run && navigate(paths.run(run.project, s.run));
  const cached = view.steps.filter((s) => s.status === "cached").length;

  return (
    <div class="pipeline-view">
      <p class="muted">
        {view.steps.length} steps · attempt {view.attempt}
        {view.started ? ` · started ${fmtTime(view.started)}` : ""}
        {view.attempt > 1 && view.attempt_started ? ` (attempt ${view.attempt} from ${fmtTime(view.attempt_started)})` : ""}
        {cached ? ` · ${cached} reused from cache` : ""} · click a step to open its run
      </p>
      <svg class="pipeline-dag" width={width} height={height} role="img" aria-label={`pipeline ${view.name}`}>
        <defs>
          {/* the arrowhead every edge ends in, pointing at the step that needs the other */}
          <marker id="pipeline-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8"
            orient="auto-start-reverse" markerUnits="userSpaceOnUse">
            <path d="M0,0 L10,5 L0,10 z" class="pipeline-arrowhead" />
          </marker>
        </defs>
        {view.steps.flatMap((s) =>
          s.needs.map((n) => {
            const a = pos.get(n)!;
            const b = pos.get(s.name)!;
            const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2;
            return <path key={`${n}-${s.name}`} class="pipeline-edge" data-from={n} data-to={s.name}
              d={`M${x1},${y1} C${x1 + GAP_X / 2},${y1} ${x2 - GAP_X / 2},${y2} ${x2},${y2}`} />;
          }),
        )}
        {view.steps.map((s) => {
          const p = pos.get(s.name)!;
          const attempts = s.attempts.length; // every attempt, across retries and resumes
          const detail = s.cached_from
            ? `cache hit · ${shortId(s.cached_from)}`
            : [s.duration !== null ? fmtDuration(s.duration) : null, attempts > 1 ? `${attempts} attempts` : null, s.kind === "gate" ? "gate" : null]
                .filter(Boolean).join(" · ");
          return (
            <g key={s.name} class={`pipeline-step step-${s.status} ${s.run ? "clickable" : ""}`} data-step={s.name}
              data-status={s.status} transform={`translate(${p.x},${p.y})`} onClick={() => open(s)}
              role={s.run ? "link" : undefined} tabIndex={s.run ? 0 : undefined}
              onKeyDown={(e: KeyboardEvent) => e.key === "Enter" && open(s)}>
              <title>{`${s.name}: ${s.status}${s.reason ? ` — ${s.reason}` : ""}`}</title>
              <rect width={W} height={H} rx={8} />
              <text x={12} y={22} class="step-name">{s.name}</text>
              <text x={12} y={42} class="step-detail">{`${s.status}${detail ? ` · ${detail}` : ""}`}</text>
            </g>
          );
        })}
      </svg>
      {view.steps.filter((s) => s.reason && !["succeeded", "cached"].includes(s.status)).map((s) => (
        <p key={s.name} class="pipeline-reason"><strong>{s.name}</strong> {s.status}: {s.reason}</p>
      ))}
      <CacheMisses view={view} project={run.project} />
      <Attempts view={view} project={run.project} />
    </div>
  );
}

/** The steps that ran although an earlier run of them succeeded, each with what changed in its key. */
function CacheMisses({ view, project }: { view: PipelineView; project: string }) {
  const missed = view.steps.filter((s) => s.status !== "cached" && s.cache_miss?.changes.length);
  if (!missed.length) return null;
  return (
    <>
      <h3 class="sub">Why steps ran again</h3>
      <ul class="pipeline-cache-misses">
        {missed.map((s) => (
          <li key={s.name} class="pipeline-cache-miss" data-step={s.name}>
            <strong>{s.name}</strong>{" "}
            <span class="muted">(last success: <Link to={paths.run(project, s.cache_miss!.previous_run)} class="mono">{shortId(s.cache_miss!.previous_run)}</Link>)</span>
            {": "}
            {s.cache_miss!.changes.map((c, i) => (
              <span key={i} class="cache-change" data-part={c.part} data-name={c.name ?? undefined}>{i ? "; " : ""}{c.text}</span>
            ))}
          </li>
        ))}
      </ul>
    </>
  );
}

/** Every attempt of every step, oldest first per step: a resume adds rows, it never hides any. */
function Attempts({ view, project }: { view: PipelineView; project: string }) {
  const rows = view.steps.flatMap((s) => s.attempts.map((a) => ({ step: s.name, a })));
  if (!rows.length) return null;
  return (
    <>
      <h3 class="sub">Attempts</h3>
      <table class="table compact pipeline-attempts">
        <thead>
          <tr><th>Step</th><th>Attempt</th><th>Pipeline attempt</th><th>Status</th><th>Started</th><th>Duration</th><th>Run</th></tr>
        </thead>
        <tbody>
          {rows.map(({ step, a }) => (
            <tr key={`${step}-${a.number}`} class="pipeline-attempt" data-step={step} data-attempt={a.number}
              data-status={a.status}>
              <td>{step}</td>
              <td>{a.number}</td>
              <td>{a.pipeline_attempt ?? 1}</td>
              <td class={`step-status status-${a.status}`}>{a.status}{a.category && a.status !== "succeeded" ? ` · ${a.category.replace(/_/g, " ")}` : ""}</td>
              <td>{fmtTime(a.started ?? null)}</td>
              <td>{fmtDuration(a.duration ?? null)}</td>
              <td>{a.run ? <Link to={paths.run(project, a.run)} class="mono">{shortId(a.run)}</Link> : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
