// A run's page: a header that stays live while the run runs, and one tab per kind of evidence.
import { useEffect, useState } from "preact/hooks";
import { ApiError, get, stream } from "../api";
import { EditRun } from "../components/EditRun";
import { CopyButton, ErrorBox, FINISHED, Loading, StatusBadge } from "../components/ui";
import { fmtDuration, fmtTime, shortId } from "../format";
import { useInterval } from "../hooks";
import { Link, navigate, paths, TABS, type Route } from "../router";
import type { Run } from "../types";
import { Artifacts } from "./run/Artifacts";
import { Logs } from "./run/Logs";
import { Metrics } from "./run/Metrics";
import { Overview } from "./run/Overview";
import { Pipeline } from "./run/Pipeline";
import { Resources } from "./run/Resources";
import { Timeline } from "./run/Timeline";

const LABELS: Record<string, string> = {
  overview: "Overview", metrics: "Metrics", logs: "Logs", resources: "Resources", timeline: "Timeline", artifacts: "Artifacts",
  pipeline: "Pipeline",
};

/** A pipeline run (a parent run the pipeline controller made) also has the pipeline tab. */
const isPipeline = (run: Run) => !run.parent_id && run.tags?.pipeline !== undefined;

export function RunPage({ route, query }: { route: Route & { page: "run" }; query: URLSearchParams }) {
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [version, setVersion] = useState(0);
  const [, setNow] = useState(0);

  useEffect(() => {
    const ctrl = new AbortController();
    setError(null);
    setRun((cur) => (cur && cur.id.startsWith(route.run) ? cur : null)); // another run: never show the last one's views
    get<Run>(`runs/${encodeURIComponent(route.run)}`, undefined, ctrl.signal).then((r) => {
      setRun(r);
      if (route.project !== r.project || route.run !== r.id) {
        navigate(paths.run(r.project, r.id, route.tab) + (location.search || ""), { replace: true });
      }
    }, (err: Error) => err.name !== "AbortError" && setError(err));
    return () => ctrl.abort();
  }, [route.run, version]);

  const running = run ? !FINISHED.has(run.status) : false;
  useEffect(() => {
    if (!run || !running) return;
    let status = run.status;
    return stream(run.id, { events: "status" }, {
      status: (doc: Run) => {
        setRun((cur) => (cur ? { ...cur, ...doc, failure: cur.failure, timeline: cur.timeline, metric_summaries: cur.metric_summaries, counters: cur.counters } : cur));
        if (doc.status !== status) {
          status = doc.status;
          setVersion((v) => v + 1);
        }
      },
      end: () => setVersion((v) => v + 1),
    });
  }, [run?.id, running]);
  useInterval(() => setNow((n) => n + 1), running ? 1000 : null);

  if (error) {
    return (
      <div class="page">
        <ErrorBox error={error} what={`run ${route.run}`} />
        {error instanceof ApiError && error.status === 404 ? <p><Link to={paths.projects()}>All projects</Link></p> : null}
      </div>
    );
  }
  if (!run) return <div class="page"><Loading what="the run" /></div>;

  const started = run.started ? Date.parse(run.started) : null;
  const liveDuration = running && started ? (Date.now() - started) / 1000 : run.duration;
  const tab = route.tab;
  return (
    <div class="page run-page">
      <div class="run-head">
        <div class="run-title">
          <h1 id="run-name">{run.name || "(unnamed run)"}</h1>
          <StatusBadge status={run.status} reason={run.end_reason} />
          {running ? <span class="live" title="updates live">● live</span> : null}
          <EditRun run={run} onSaved={(r) => setRun((cur) => (cur ? { ...cur, name: r.name, tags: r.tags } : cur))} />
        </div>
        {run.tags.description ? <p class="run-description muted" id="run-description">{run.tags.description}</p> : null}
        <div class="run-meta muted">
          <span class="mono" title={run.id}>{shortId(run.id)}</span> <CopyButton text={run.id} label="Copy id" />
          <span>· project <Link to={paths.runs(run.project)}>{run.project}</Link></span>
          <span>· started {fmtTime(run.started ?? run.created)}</span>
          <span>· {running ? "running for " : "took "}{fmtDuration(liveDuration)}</span>
          {run.attempt > 1 ? <span>· attempt {run.attempt}</span> : null}
          {run.host ? <span>· on {run.host}</span> : null}
          {run.parent_id ? <span>· step of <Link to={paths.run(run.project, run.parent_id)}>{shortId(run.parent_id)}</Link></span> : null}
          {run.tags.kind === "sweep" ? <span>· <Link to={paths.explore(run.project, { sweep: run.id })} id="sweep-link">sweep view</Link></span> : null}
          {run.kind === "serving" ? (
            <span class="serving-link">· serving replica of{" "}
              <Link to={paths.deployment(run.tags["serving.endpoint"] ?? "", run.tags["serving.env"], run.project)} id="deployment-link">
                {run.tags["serving.endpoint"]} ({run.tags["serving.env"]})
              </Link>{run.tags["serving.version"] ? ` v${run.tags["serving.version"]}` : ""}
            </span>
          ) : null}
        </div>
      </div>
      <nav class="tabs" role="tablist" aria-label="run views">
        {TABS.filter((t) => t !== "pipeline" || isPipeline(run)).map((t) => (
          <Link key={t} to={paths.run(run.project, run.id, t)} class={`tab ${t === tab ? "on" : ""}`} role="tab"
            aria-selected={t === tab} data-tab={t}>{LABELS[t]}</Link>
        ))}
      </nav>
      <div class="tab-body" role="tabpanel">
        {tab === "overview" ? <Overview run={run} /> : null}
        {tab === "metrics" ? <Metrics run={run} query={query} /> : null}
        {tab === "logs" ? <Logs run={run} query={query} /> : null}
        {tab === "resources" ? <Resources run={run} /> : null}
        {tab === "timeline" ? <Timeline run={run} /> : null}
        {tab === "artifacts" ? <Artifacts run={run} query={query} /> : null}
        {tab === "pipeline" ? <Pipeline run={run} /> : null}
        {tab === "notfound" ? <p>No such tab. Pick one above.</p> : null}
      </div>
    </div>
  );
}
