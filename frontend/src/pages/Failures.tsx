// Failures: a project's failed, crashed and killed runs grouped by cause (GET api/v1/triage, the
// report of `flightlog triage`), the biggest cause first, each with a sparkline of its failures
// per day, the onset (what changed between the last good run and the first bad one) and links
// to its runs. The project and the window are in the URL (?project=P&since=7d).
import { get } from "../api";
import { Empty, ErrorBox, Loading, Segmented } from "../components/ui";
import { fmtAgo, fmtTime, shortId } from "../format";
import { useAsync } from "../hooks";
import { Link, paths, setQuery } from "../router";

interface Change { kind: string; name: string; before: unknown; after: unknown; text: string }
interface Onset { first_bad: string; last_good: string | null; summary: string | null; changes: Change[] }
/** An out-of-memory group's figure: the same text `flightlog triage` prints and the runs' diagnoses quote. */
interface GroupMemory { peak_bytes: number | null; limit_bytes: number | null; text: string }
interface FailureGroup {
  id: string;
  signature: string;
  category: string;
  example: string;
  count: number;
  statuses: Record<string, number>;
  first_seen: string;
  last_seen: string;
  projects: string[];
  runs: string[];
  per_day: number[];
  onset: Onset | null;
  memory: GroupMemory | null;
}
interface Triage {
  project: string | null;
  pipeline: string | null;
  since: string;
  until: string;
  failures: number;
  days: string[];
  groups: FailureGroup[];
}

const WINDOWS: ["1d" | "7d" | "30d", string][] = [["1d", "1 day"], ["7d", "7 days"], ["30d", "30 days"]];
const SHOWN_RUNS = 8;

/** Bars of failures per day; each bar's title says the day and the count. */
function Sparkline({ counts, days }: { counts: number[]; days: string[] }) {
  const top = Math.max(1, ...counts);
  const w = 6, gap = 2, h = 28;
  return (
    <svg class="sparkline" width={counts.length * (w + gap)} height={h} role="img"
      aria-label={`failures per day: ${counts.join(", ")}`}>
      {counts.map((c, i) => {
        const bh = c ? Math.max(2, Math.round((c / top) * (h - 2))) : 1;
        return (
          <rect key={i} x={i * (w + gap)} y={h - bh} width={w} height={bh} class={c ? "bar" : "bar bar-zero"}>
            <title>{`${days[i]}: ${c} failure${c === 1 ? "" : "s"}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

function GroupCard({ g, days, project }: { g: FailureGroup; days: string[]; project: string | null }) {
  const runProject = project ?? (g.projects.length === 1 ? g.projects[0] : null);
  const runLink = (id: string) => (runProject ? paths.run(runProject, id) : `runs/${encodeURIComponent(id)}`);
  const statuses = Object.entries(g.statuses).map(([k, v]) => `${v} ${k}`).join(", ");
  return (
    <section class="card failure-group" data-group={g.id} data-category={g.category}>
      <header class="card-head">
        <h2>
          <span class="category">{g.category}</span>{" "}
          <span class="count" title={statuses}>{g.count} run{g.count === 1 ? "" : "s"}</span>
        </h2>
        <div class="card-actions">
          <Sparkline counts={g.per_day} days={days} />
          <span class="muted small">per day</span>
          <span class="muted small" title={`${fmtTime(g.first_seen)} → ${fmtTime(g.last_seen)}`}>
            first {fmtAgo(g.first_seen)} · last {fmtAgo(g.last_seen)}
          </span>
        </div>
      </header>
      <div class="card-body">
        <div class="signature mono" title="cause signature: category · masked exception · your innermost frame · step">{g.signature}</div>
        <div class="example" title="the newest run's own message (redacted when stored)">{g.example}</div>
        {g.memory ? <div class="memory" title="the highest peak among the group's newest runs, against the limit it ran under">{g.memory.text}</div> : null}
        {g.onset ? (
          <div class="onset">
            <strong>Onset</strong>{" "}
            {g.onset.last_good ? (
              <>
                between last good <Link to={runLink(g.onset.last_good)} class="mono">{shortId(g.onset.last_good)}</Link>{" "}
                and first bad <Link to={runLink(g.onset.first_bad)} class="mono">{shortId(g.onset.first_bad)}</Link>:{" "}
                {g.onset.changes.length ? (
                  <ul class="changes">
                    {g.onset.changes.slice(0, 6).map((c, i) => <li key={i} data-kind={c.kind}>{c.text}</li>)}
                  </ul>
                ) : <span class="muted">{g.onset.summary}</span>}
              </>
            ) : <span class="muted">{g.onset.summary}</span>}
          </div>
        ) : null}
        <div class="group-runs">
          {g.runs.slice(0, SHOWN_RUNS).map((id) => <Link key={id} to={runLink(id)} class="mono group-run" title={id}>{shortId(id)}</Link>)}
          {g.runs.length > SHOWN_RUNS ? <span class="muted">+{g.runs.length - SHOWN_RUNS} more</span> : null}
        </div>
      </div>
    </section>
  );
}

export function Failures({ project, query }: { project: string | null; query: URLSearchParams }) {
  const since = query.get("since") || "7d";
  const pipeline = query.get("pipeline");
  const report = useAsync(
    (signal) => get<Triage>("triage", { project, since, pipeline }, signal),
    [project, since, pipeline],
  );
  const choice = (WINDOWS.find(([w]) => w === since)?.[0] ?? "7d") as "1d" | "7d" | "30d";
  return (
    <div class="page failures-page">
      <div class="page-head">
        <h1>Failures{project ? <span class="muted"> in {project}</span> : null}</h1>
        <Segmented value={choice} options={WINDOWS} label="window" onChange={(v) => setQuery({ since: v })} />
        {project ? <Link to={paths.runs(project, { filter: "status in ('failed', 'crashed', 'killed')" })}>failed runs</Link> : null}
      </div>
      {report.error ? <ErrorBox error={report.error} what="failures" /> : null}
      {!report.data && !report.error ? <Loading what="failures" /> : null}
      {report.data && report.data.groups.length === 0 ? (
        <Empty>No failures{project ? ` in ${project}` : ""} since {fmtTime(report.data.since)}: no run failed, crashed or was killed.</Empty>
      ) : null}
      {report.data && report.data.groups.length ? (
        <>
          <p class="summary" id="failures-summary">
            {report.data.failures} failure{report.data.failures === 1 ? "" : "s"} since {fmtTime(report.data.since)}:{" "}
            <strong>{report.data.groups.length} cause{report.data.groups.length === 1 ? "" : "s"}</strong>
          </p>
          {report.data.groups.map((g) => <GroupCard key={g.id} g={g} days={report.data!.days} project={project} />)}
        </>
      ) : null}
    </div>
  );
}
