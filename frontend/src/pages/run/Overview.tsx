// Overview: how the run went (times, exit, the failure card, diagnosis findings), what it was
// given (params, tags, inputs, runtime context) and what people noted about it.
import { useState } from "preact/hooks";
import { ApiError, get, send } from "../../api";
import { RunAlerts } from "../../components/Alerts";
import { Card, Empty, ErrorBox, FINISHED, KV, Loading } from "../../components/ui";
import { fmtBytes, fmtDuration, fmtMs, fmtNum, fmtRate, fmtTime, fmtValue, shellJoin, shortId, signalName } from "../../format";
import { type Async, useAsync, useInterval, useStored } from "../../hooks";
import { Link, paths } from "../../router";
import type { Context, Culprit, Diagnosis, Finding, Lineage, Note, Rightsizing, Run, RunbookEntry, Stage, Victim, VersionStats } from "../../types";
import { framesForDisplay } from "../../frames";
import { attemptAt, attemptsOf, clock, exitNote, sec } from "./attempts";
import { RanksCard, useRanks } from "./Ranks";

const LIVE_DIAGNOSIS_MS = 10_000;

export function Overview({ run }: { run: Run }) {
  const ranks = useRanks(run);
  const list = ranks.data?.ranks ?? [];
  const diag = useAsync((signal) => get<Diagnosis>(`runs/${run.id}/diagnosis`, undefined, signal), [run.id, run.status]);
  useInterval(() => diag.reload(), FINISHED.has(run.status) ? null : LIVE_DIAGNOSIS_MS); // a hang is a finding while it happens
  const culprit = culpritRank(run, diag.data);
  return (
    <div class="overview">
      <div class="grid-2">
        <Summary run={run} />
        {run.failure ? <FailureCard run={run} /> : <Outcome run={run} />}
      </div>
      <DiagnosisCard run={run} diag={diag} />
      {ranks.error ? <ErrorBox error={ranks.error} what="the ranks" /> : null}
      {list.length ? <RanksCard run={run} ranks={list} culprit={culprit} /> : null}
      <RunAlerts runId={run.id} />
      <div class="grid-2">
        <Params run={run} />
        <NotesCard run={run} />
      </div>
      <div class="grid-2">
        <InputsOutputs run={run} />
        <ContextCard run={run} />
      </div>
    </div>
  );
}

function Summary({ run }: { run: Run }) {
  const tl = run.timeline ?? {};
  const stages = useAsync((signal) => (run.attempt > 1 ? get<{ stages: Stage[] }>(`runs/${run.id}/stages`, undefined, signal) : Promise.resolve({ stages: [] })),
    [run.id, run.status, run.attempt]);
  const attempts = attemptsOf(run, stages.data?.stages ?? []);
  const firstIn = attempts.length > 1 ? attemptAt(attempts, sec(tl.first_metric)) : null;
  // a resumed run's start (and so its duration) is its last attempt's: say so
  const started = sec(run.started);
  const startedIn = attempts.length > 1 && started !== null ? attempts.find((a) => a.end >= started) ?? null : null;
  const of = (a: { n: number } | null) => (a ? ` (attempt ${a.n})` : "");
  const rows: [string, preact.ComponentChildren][] = [
    ["Created", fmtTime(run.created, { millis: true })],
    ["Queued", fmtTime(run.queued, { millis: true })],
    ["Started", fmtTime(run.started, { millis: true }) + of(startedIn)],
    ["First step", fmtTime(tl.first_metric, { millis: true }) + of(firstIn)],
    ["Ended", fmtTime(run.ended, { millis: true })],
    ["Duration", fmtDuration(run.duration) + (startedIn && startedIn.n > 1 ? ` (since attempt ${startedIn.n} started)` : "")],
  ];
  if (run.queue_wait !== null) rows.push(["Queue wait", fmtDuration(run.queue_wait)]);
  rows.push(["Exit", exitText(run)]);
  if (run.attempt > 1) rows.push(["Attempt", String(run.attempt)]);
  if (attempts.length > 1) {
    rows.push(["Attempts", (
      <ol class="attempt-list">
        {attempts.map((a) => (
          <li key={a.n} data-attempt={a.n}>
            <span class="strong">{a.n}</span> {clock(a.start)} – {a.running ? "running" : clock(a.end)}
            <span class="muted"> · {fmtDuration(a.end - a.start)}{exitNote(a)}</span>
          </li>
        ))}
      </ol>
    )]);
  }
  if (run.host) rows.push(["Host", `${run.host}${run.pid ? ` (pid ${run.pid})` : ""}`]);
  const c = run.counters ?? {};
  const dropped = Object.entries(c).filter(([k, v]) => /drop/.test(k) && v > 0);
  for (const [k, v] of dropped) rows.push([k.replace(/_/g, " "), String(v)]);
  return (
    <Card title="Run" class="summary-card">
      <KV rows={rows} />
      {Object.keys(run.tags).length ? (
        <div class="tags">
          {Object.entries(run.tags).map(([k, v]) => (
            <Link key={k} class="tag" to={paths.runs(run.project, { filter: `tags.${/^[\w./-]+$/.test(k) ? k : "`" + k + "`"} = '${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'` })}
              title="runs with this tag">{k}={v}</Link>
          ))}
        </div>
      ) : null}
    </Card>
  );
}

function exitText(run: Run): string {
  const parts: string[] = [];
  if (run.exit_code !== null) parts.push(`exit code ${run.exit_code}`);
  if (run.signal !== null) parts.push(signalName(run.signal));
  if (run.end_reason) parts.push(`(${run.end_reason.replace(/_/g, " ")})`);
  return parts.join(" ") || (FINISHED.has(run.status) ? "—" : "still running");
}

function Outcome({ run }: { run: Run }) {
  const ms = run.metric_summaries ?? {};
  const names = Object.keys(ms).slice(0, 8);
  return (
    <Card title="Latest metrics">
      {names.length ? (
        <KV rows={names.map((n) => [n, fmtValue(ms[n].last as number)])} />
      ) : <Empty>No metrics logged.</Empty>}
      {names.length ? <p><Link to={paths.run(run.project, run.id, "metrics")}>All charts →</Link></p> : null}
    </Card>
  );
}

function FailureCard({ run }: { run: Run }) {
  const f = run.failure!;
  const frames = framesForDisplay(f.frames); // the user's innermost frame first, then the innermost
  const lines = f.last_lines ?? [];
  return (
    <Card title="Failure" class="failure-card" id="failure">
      <div class="failure-head">
        <span class="exception" id="failure-exception">{f.exception || "The run failed"}</span>
        {f.category ? <span class="chip chip-danger">{f.category.replace(/_/g, " ")}</span> : null}
      </div>
      {f.message ? <pre class="failure-message" id="failure-message">{f.message}</pre> : null}
      <CulpritNote run={run} />
      {frames.length ? (
        <div class="frames">
          <div class="muted small">Where it failed: your code first, then the innermost frames</div>
          <ol class="frame-list">
            {frames.map((fr, i) => (
              <li key={i} class={`frame ${fr.user ? "frame-user" : "frame-library"}`}>
                <span class="mono">{fr.file}:{fr.line ?? "?"}</span> <span class="muted">in</span> <span class="mono strong">{fr.function}</span>
                {fr.user ? <span class="frame-mine">your code</span> : null}
                {fr.code ? <pre class="frame-code">{fr.code}</pre> : null}
              </li>
            ))}
          </ol>
        </div>
      ) : null}
      {f.traceback ? (
        <details class="traceback">
          <summary>Full traceback</summary>
          <pre id="failure-traceback">{f.traceback}</pre>
        </details>
      ) : null}
      {lines.length ? (
        <details class="last-lines" open={!frames.length}>
          <summary>Last log lines</summary>
          <pre>{lines.join("\n")}</pre>
        </details>
      ) : null}
      <p class="small">
        <Link to={paths.run(run.project, run.id, "logs", { level: "warning" })}>Warnings and errors in the logs →</Link>
      </p>
    </Card>
  );
}

/** A distributed run whose culprit is known: the error above is often a victim's (the rank that
 *  timed out waiting), so the failure card says which rank caused it. */
function CulpritNote({ run }: { run: Run }) {
  const f = run.failure!;
  const c = f.culprit as { rank?: number | null; summary?: string; alike?: number[] } | undefined;
  const shown = typeof f.rank === "number" ? f.rank : null;
  if (c?.alike?.length) {
    // no culprit: the ranks failed with the same error, a cause they share
    return (
      <div class="failure-culprit" id="failure-culprit" data-alike={c.alike.join(",")}>
        <span class="chip chip-danger">alike</span> <span class="strong">{ranksText(c.alike)} failed alike</span>, none caused it{c.summary ? `: ${c.summary}` : ""}
      </div>
    );
  }
  if ((!c || typeof c.rank !== "number") && shown !== null) {
    // ranks without a runner: the run's failure is the first rank's to fail, often one that only waited
    return (
      <div class="failure-culprit" id="failure-culprit">
        The error above is rank {shown}'s, the first rank to fail; the{" "}
        <button type="button" class="link-button" onClick={() => document.getElementById("diagnosis")?.scrollIntoView({ block: "start" })}>diagnosis ↓</button>{" "}
        says which rank caused it.
      </div>
    );
  }
  if (!c || typeof c.rank !== "number") return null;
  return (
    <div class="failure-culprit" id="failure-culprit" data-rank={c.rank}>
      <span class="chip chip-danger">culprit</span> <span class="strong">rank {c.rank}</span>{c.summary ? `: ${c.summary}` : ""}
      {shown !== null && shown !== c.rank ? <div class="muted small">The error above is rank {shown}'s: it only waited for rank {c.rank}.</div> : null}
    </div>
  );
}

/** The culprit rank: the runner's verdict on the run's failure, else the diagnosis's lead finding. */
function culpritRank(run: Run, d: Diagnosis | undefined): number | null {
  const fromRun = run.failure?.culprit as { rank?: number | null } | undefined;
  if (fromRun && typeof fromRun.rank === "number") return fromRun.rank;
  const lead = d?.findings.find((f) => f.confidence >= 0.5 && f.culprit);
  return lead ? (lead.culprit as Culprit).rank : null;
}

/** ``rank 1``, ``ranks 0 and 2``, ``ranks 0, 1 and 3``: as the diagnosis and the CLI say them. */
function ranksText(ranks: number[]): string {
  if (ranks.length === 1) return `rank ${ranks[0]}`;
  return `ranks ${ranks.slice(0, -1).join(", ")} and ${ranks[ranks.length - 1]}`;
}

function DiagnosisCard({ run, diag }: { run: Run; diag: Async<Diagnosis> }) {
  const finished = FINISHED.has(run.status);
  if (diag.error instanceof ApiError && diag.error.noRoute) return null; // this server has no diagnosis
  if (!finished && !diag.data) return null;
  const findings = (diag.data?.findings ?? []).filter((f) => f.confidence >= 0.3);
  return (
    <Card title="Diagnosis" id="diagnosis" actions={diag.data ? (
      <span class="muted small">
        kind: {diag.data.kind}
        {baselineOf(diag.data) ? <> · <Link to={paths.compare(run.project, [baselineOf(diag.data)!, run.id])}>compare with its baseline</Link></>
          : diag.data.baseline_choice?.reason ? <> · <span id="no-baseline" title="why no run was compared with">no baseline: {diag.data.baseline_choice.reason}</span></> : null}
      </span>
    ) : null}>
      {diag.error ? <ErrorBox error={diag.error} what="the diagnosis" /> : null}
      {diag.loading && !diag.data ? <Loading what="the diagnosis" /> : null}
      {diag.data?.serving ? <ServingSection s={diag.data.serving as ServingDiagnosis} project={run.project} /> : null}
      {diag.data && !findings.length ? <p class="muted">No likely problem found.</p> : null}
      <ol class="findings">
        {findings.map((f, i) => (
          <li key={i} class="finding" data-category={f.category}>
            <div class="finding-head">
              <span class={`chip ${f.confidence >= 0.5 ? "chip-danger" : ""}`}>{f.category.replace(/_/g, " ")}</span>
              <span class="confidence" title="confidence">
                <span class="bar"><span style={{ width: `${Math.round(f.confidence * 100)}%` }} /></span>
                {Math.round(f.confidence * 100)}%
              </span>
            </div>
            <p class="finding-summary">{f.summary}</p>
            {f.culprit ? <CulpritBlock run={run} finding={f} /> : null}
            {f.evidence?.length ? (
              <ul class="evidence">
                {f.evidence.slice(0, 6).map((e, j) => (
                  <li key={j}><span class="chip">{e.source}</span> {e.detail}{e.at ? <span class="muted small"> · {fmtTime(e.at, { millis: true })}</span> : null}</li>
                ))}
              </ul>
            ) : null}
            {f.next_steps?.length ? (
              <div class="next-steps">
                <div class="muted small">Next steps</div>
                <ul>{f.next_steps.map((s, j) => <li key={j}>{s}{pointsTo(s, diag.data!)}</li>)}</ul>
              </div>
            ) : null}
          </li>
        ))}
      </ol>
      {diag.data?.runbook?.length ? <Runbook entries={diag.data.runbook} /> : null}
      {diag.data?.rightsizing ? <RightsizingSection rs={diag.data.rightsizing} /> : null}
    </Card>
  );
}

/** A distributed run's finding: the culprit first (its rank, host, where it was, the collective
 *  it never entered), the ranks that only waited for it folded under it with their errors. */
function CulpritBlock({ run, finding }: { run: Run; finding: Finding }) {
  const c = finding.culprit as Culprit;
  const victims = (finding.victims as Victim[] | undefined) ?? [];
  if (c.rank === null) {
    // no culprit: these ranks failed alike (docs/distributed.md, "Ranks that failed alike")
    return (
      <div class="culprit" data-alike={(c.alike ?? []).join(",")}>
        <div class="culprit-head">
          <span class="chip chip-danger">alike</span> <span class="strong">{ranksText(c.alike ?? [])} failed alike</span>
          <span class="muted">, none caused it</span>
          {c.where ? <> · raised in <span class="mono strong">{c.where.function}</span> at <span class="mono culprit-where">{c.where.file}:{c.where.line ?? "?"}</span></> : null}
        </div>
        {victims.length ? (
          <div class="muted small">{ranksText(victims.map((v) => v.rank))} only waited</div>
        ) : null}
      </div>
    );
  }
  return (
    <div class="culprit" data-rank={c.rank}>
      <div class="culprit-head">
        <span class="chip chip-danger">culprit</span> <span class="strong">rank {c.rank}</span>
        {c.host ? <span class="muted"> on {c.host}</span> : null}
        {c.where ? <> · in <span class="mono strong">{c.where.function}</span> at <span class="mono culprit-where">{c.where.file}:{c.where.line ?? "?"}</span></> : null}
        {c.collective ? <> · never in <span class="mono">{c.collective.op} #{c.collective.seq}</span></> : null}
        {c.stuck_s !== undefined ? <span class="muted"> · stuck {fmtDuration(c.stuck_s)}</span> : null}
        {" "}<Link class="small" to={paths.run(run.project, run.id, "logs", { rank: String(c.rank) })}>its logs</Link>
      </div>
      {victims.length ? (
        <details class="victims">
          <summary>{victims.length === 1 ? `rank ${victims[0].rank} only waited for it` : `${victims.length} ranks only waited for it`} (victims)</summary>
          <ul>
            {victims.map((v) => (
              <li key={v.rank} class="victim" data-rank={v.rank}>
                <span class="strong">rank {v.rank}</span>
                {v.waited_s !== null ? <span class="muted"> waited {fmtDuration(v.waited_s)}</span> : null}
                {v.error ? <>: <span class="mono small">{v.error}</span></> : null}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </div>
  );
}

/** A next step that names a section of this report ("See the rightsizing section …") links to it. */
function pointsTo(step: string, d: Diagnosis): preact.ComponentChildren {
  const target = /rightsiz/i.test(step) && d.rightsizing ? "rightsizing" : /runbook/i.test(step) && d.runbook?.length ? "runbook" : null;
  if (!target) return null;
  return (
    <> <button type="button" class="link-button small" onClick={() => document.getElementById(target)?.scrollIntoView({ block: "start" })}>
      {target} ↓</button></>
  );
}

interface ServingDiagnosis {
  endpoint: string;
  env: string;
  model: string | null;
  version: string;
  traffic: VersionStats[];
  diagnosis?: { headline?: string; error?: string };
  commands: Record<string, string>;
  /** set when a rollout or a scale-down stopped it (SIGTERM): a clean stop, not a failure */
  stop?: string | null;
}

/** A serving replica is diagnosed as serving: its own traffic, and its deployment's story. */
function ServingSection({ s, project }: { s: ServingDiagnosis; project: string }) {
  return (
    <section class="serving-diagnosis" id="serving-diagnosis">
      <p>
        Serving replica of <Link to={paths.deployment(s.endpoint, s.env, project)} class="strong">{s.endpoint} ({s.env})</Link>
        {s.model ? ` · ${s.model}` : ""} v{s.version}
      </p>
      <ul class="serving-traffic">
        {s.traffic.map((t) => (
          <li key={t.version} data-version={t.version}>
            v{t.version}: {fmtNum(t.requests)} requests · 5xx {fmtRate(t.error_rate)} · 4xx {fmtRate(t.client_error_rate)}
            {t.p50_ms !== null ? ` · p50 ${fmtMs(t.p50_ms)} · p99 ${fmtMs(t.p99_ms)}` : ""}
            {Object.keys(t.error_types).length ? ` · ${Object.entries(t.error_types).map(([k, n]) => `${k} ${n}`).join(", ")}` : ""}
          </li>
        ))}
      </ul>
      {s.stop ? <p class="serving-stop" id="serving-stop">{s.stop[0].toUpperCase() + s.stop.slice(1)}.</p> : null}
      {s.diagnosis?.headline ? <p class="serving-headline">Deployment: {s.diagnosis.headline}</p> : null}
      {s.diagnosis?.error ? <p class="muted small">{s.diagnosis.error}</p> : null}
    </section>
  );
}

function Runbook({ entries }: { entries: RunbookEntry[] }) {
  return (
    <section class="runbook" id="runbook">
      <h3 class="sub">Runbook</h3>
      <ul class="runbook-list">
        {entries.map((e) => (
          <li key={e.id} class="runbook-entry" data-entry={e.id}>
            <div><span class="strong">{e.title}</span> <span class="muted small">({e.source}; matched {e.matched.join("; ")})</span></div>
            <ul>{e.advice.map((a, j) => <li key={j}>{a}</li>)}</ul>
            {e.links?.length ? (
              <div class="small">{e.links.map((l, j) => (/^https?:\/\//.test(l)
                ? <a key={j} href={l} target="_blank" rel="noopener noreferrer" class="mono">{l}</a>
                : <span key={j} class="mono">{l}</span>))}</div>
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}

function RightsizingSection({ rs }: { rs: Rightsizing }) {
  const { memory: mem, cpu, request: req } = rs;
  const rows: [string, preact.ComponentChildren][] = [];
  rows.push(["Memory", mem.recommended_bytes ? (
    <span><span class="mono strong">request {req.memory ?? fmtBytes(mem.recommended_bytes)}</span> <span class="muted">({mem.basis}{mem.requested_bytes ? `; the limit was ${fmtBytes(mem.requested_bytes)}` : ""})</span></span>
  ) : <span class="muted">no samples to go on</span>]);
  if (cpu.recommended_cores) {
    rows.push(["CPU", <span><span class="mono strong">request {req.cpu ?? cpu.recommended_cores}</span> <span class="muted">(95th percentile {cpu.p95_cores?.toFixed(2)} cores, peak {cpu.peak_cores?.toFixed(2)}, average {cpu.avg_cores?.toFixed(2)}; {cpu.samples} samples)</span></span>]);
  }
  if (rs.gpu?.memory_peak_bytes) rows.push(["GPU memory", `peak ${fmtBytes(rs.gpu.memory_peak_bytes)}`]);
  return (
    <section class="rightsizing" id="rightsizing">
      <h3 class="sub">Rightsizing</h3>
      <KV rows={rows} />
      {rs.flags.length ? (
        <ul class="rightsizing-flags">
          {rs.flags.map((f, i) => (
            <li key={i} data-flag={f.kind}><span class={`chip ${f.kind === "over_provisioned" ? "chip-warn" : "chip-danger"}`}>{f.kind.replace(/_/g, " ")}</span> {f.detail}</li>
          ))}
        </ul>
      ) : null}
    </section>
  );
}

function baselineOf(d: Diagnosis): string | null {
  const b = d.baseline as { baseline?: unknown } | string | null | undefined;
  const id = typeof b === "string" ? b : b && typeof b.baseline === "string" ? b.baseline : null;
  return id && id !== d.run ? id : null;
}

function Params({ run }: { run: Run }) {
  const [search, setSearch] = useState("");
  const entries = Object.entries(run.params).sort((a, b) => a[0].localeCompare(b[0]));
  const shown = entries.filter(([k, v]) => !search || k.toLowerCase().includes(search.toLowerCase()) || fmtValue(v).toLowerCase().includes(search.toLowerCase()));
  return (
    <Card title={`Params (${entries.length})`} id="params" actions={entries.length > 12 ? (
      <input type="search" class="small-input" placeholder="Find" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
    ) : null}>
      {entries.length ? (
        <table class="table compact params-table">
          <tbody>
            {shown.map(([k, v]) => (
              <tr key={k}><th class="mono">{k}</th><td class="mono">{fmtValue(v)}</td></tr>
            ))}
          </tbody>
        </table>
      ) : <Empty>No params logged.</Empty>}
    </Card>
  );
}

function NotesCard({ run }: { run: Run }) {
  const notes = useAsync((signal) => get<{ notes: Note[] }>(`runs/${run.id}/notes`, undefined, signal), [run.id]);
  const [text, setText] = useState("");
  const [author, setAuthor] = useStored("flightlog.author", "");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const add = async (e: Event) => {
    e.preventDefault();
    if (!text.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const note = await send<Note>("POST", `runs/${run.id}/notes`, { text, author: author.trim() || null });
      notes.set({ notes: [...(notes.data?.notes ?? []), note] });
      setText("");
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  const list = notes.data?.notes ?? [];
  return (
    <Card title={`Notes (${list.length})`} id="notes">
      {notes.error ? <ErrorBox error={notes.error} what="notes" /> : null}
      <ul class="notes">
        {list.map((n) => (
          <li key={n.id} class="note">
            <div class="note-meta muted small">{n.author || "anonymous"} · {fmtTime(n.time)}</div>
            <div class="note-text">{n.text}</div>
          </li>
        ))}
      </ul>
      {!list.length && notes.data ? <p class="muted">No notes yet: keep hypotheses and evidence with the run.</p> : null}
      <form class="note-form" onSubmit={add}>
        <textarea name="note" placeholder="Add a note (a hypothesis, what you tried, what you found)" value={text} rows={3}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
        <div class="note-form-row">
          <input name="author" placeholder="Your name (optional)" value={author} onInput={(e) => setAuthor((e.target as HTMLInputElement).value)} />
          <button class="btn btn-primary" type="submit" disabled={busy || !text.trim()}>Add note</button>
        </div>
        {error ? <p class="form-error" role="alert">{error}</p> : null}
      </form>
    </Card>
  );
}

function InputsOutputs({ run }: { run: Run }) {
  const lin = useAsync((signal) => get<Lineage>(`runs/${run.id}/lineage`, undefined, signal), [run.id, run.status]);
  const runLinks = (ids: string[], label: string) => ids.length ? (
    <span class="small"> · {label} {ids.slice(0, 5).map((id, i) => <span key={id}>{i ? ", " : ""}<Link to={`runs/${id}`}>{shortId(id)}</Link></span>)}{ids.length > 5 ? ` and ${ids.length - 5} more` : ""}</span>
  ) : null;
  return (
    <Card title="Inputs and outputs" id="io" actions={<Link to={paths.run(run.project, run.id, "artifacts")} class="small">Artifacts and lineage →</Link>}>
      {lin.error ? <ErrorBox error={lin.error} what="lineage" /> : null}
      {!lin.data && !lin.error ? <Loading /> : null}
      {lin.data ? (
        <>
          <h3 class="sub">Inputs</h3>
          {lin.data.inputs.length ? (
            <ul class="io-list">
              {lin.data.inputs.map(({ artifact: a, produced_by }) => (
                <li key={a.id}><span class="mono">{a.path}</span> <span class="muted small">{a.kind ?? ""} {fmtBytes(a.size)} {a.sha256 ? shortId(a.sha256) : ""}</span>
                  {runLinks(produced_by, "made by")}</li>
              ))}
            </ul>
          ) : <p class="muted">No inputs recorded.</p>}
          <h3 class="sub">Outputs</h3>
          {lin.data.outputs.length ? (
            <ul class="io-list">
              {lin.data.outputs.slice(0, 30).map(({ artifact: a, used_by }) => (
                <li key={a.id}><span class="mono">{a.path}</span> <span class="muted small">{a.kind ?? ""} {fmtBytes(a.size)}{a.step !== null ? ` · step ${a.step}` : ""}</span>
                  {runLinks(used_by, "used by")}</li>
              ))}
              {lin.data.outputs.length > 30 ? <li class="muted">and {lin.data.outputs.length - 30} more</li> : null}
            </ul>
          ) : <p class="muted">No outputs recorded.</p>}
        </>
      ) : null}
    </Card>
  );
}

function ContextCard({ run }: { run: Run }) {
  const ctx = useAsync((signal) => get<Context>(`runs/${run.id}/context`, undefined, signal), [run.id]);
  const [pkgSearch, setPkgSearch] = useState("");
  const c = ctx.data;
  return (
    <Card title="Runtime context" id="context">
      {ctx.error ? <ErrorBox error={ctx.error} what="the context" /> : null}
      {!c && !ctx.error ? <Loading /> : null}
      {c && !Object.keys(c).length ? <p class="muted">No runtime context was recorded.</p> : null}
      {c && Object.keys(c).length ? (
        <>
          <KV rows={[
            ["Commit", c.git?.commit ? (
              <span class="mono" title={c.git.commit}>{c.git.commit.slice(0, 12)}{c.git.dirty ? <span class="chip chip-warn" title={c.git.diff_sha256 ? `diff ${c.git.diff_sha256}` : ""}>dirty</span> : null}{c.git.branch ? <span class="muted"> on {c.git.branch}</span> : null}</span>
            ) : "—"],
            ["Command", c.command ? <code class="mono wrap">{shellJoin(c.command)}</code> : "—"],
            ["Working dir", c.cwd ? <span class="mono">{c.cwd}</span> : "—"],
            ["Host", `${c.host ?? "—"}${c.user ? ` (user ${c.user})` : ""}${c.cpu_count ? ` · ${c.cpu_count} CPUs` : ""}`],
            ["Python", `${c.python ?? "—"}${c.python_executable ? ` · ${c.python_executable}` : ""}`],
            ["Platform", c.platform ?? "—"],
            ...(c.container && Object.keys(c.container).length ? [["Container", <span class="mono">{JSON.stringify(c.container)}</span>] as [string, preact.ComponentChildren]] : []),
            ...(c.env && Object.keys(c.env).length ? [["Environment", <span class="mono small wrap">{Object.entries(c.env).map(([k, v]) => `${k}=${v}`).join("  ")}</span>] as [string, preact.ComponentChildren]] : []),
          ]} />
          {c.git?.changed_files?.length ? (
            <details class="changed-files">
              <summary>{c.git.changed_files.length} uncommitted file{c.git.changed_files.length === 1 ? "" : "s"}</summary>
              <ul class="mono small">{c.git.changed_files.slice(0, 200).map((f) => <li key={f}>{f}</li>)}</ul>
            </details>
          ) : null}
          {c.packages && Object.keys(c.packages).length ? (
            <details class="packages">
              <summary>{Object.keys(c.packages).length} installed packages</summary>
              <input type="search" class="small-input" placeholder="Find a package" value={pkgSearch}
                onInput={(e) => setPkgSearch((e.target as HTMLInputElement).value)} />
              <table class="table compact mono small">
                <tbody>
                  {Object.entries(c.packages).filter(([k]) => k.toLowerCase().includes(pkgSearch.toLowerCase())).map(([k, v]) => (
                    <tr key={k}><td>{k}</td><td>{v}</td></tr>
                  ))}
                </tbody>
              </table>
            </details>
          ) : null}
        </>
      ) : null}
    </Card>
  );
}
