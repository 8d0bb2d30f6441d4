// The model registry (docs/models.md): every registered model with its latest version and
// aliases, and a model's page: its versions (each from a run's artifact, with its digest), the
// aliases with their history (who moved them, when, from which version), tags, description,
// and each version's lineage (its run, the run's inputs and input manifests).
import { ApiError, get } from "../api";
import { Card, Empty, ErrorBox, KV, Loading, StatusBadge } from "../components/ui";
import { fmtAgo, fmtBytes, fmtTime, fmtValue, shortId } from "../format";
import { useAsync } from "../hooks";
import { Link, paths } from "../router";
import type { AliasChange, ModelVersion, RegisteredModel, VersionLineage } from "../types";

/** A missing registry API (the feature is not installed on this server) reads as "no models". */
function noRegistry(err: unknown): boolean {
  return err instanceof ApiError && err.noRoute;
}

export function AliasBadges({ aliases }: { aliases: string[] }) {
  if (!aliases.length) return null;
  return (
    <span class="alias-badges">
      {aliases.sort().map((a) => <span key={a} class="chip chip-alias" data-alias={a}>@{a}</span>)}
    </span>
  );
}

export function Models() {
  const models = useAsync((signal) => get<{ models: RegisteredModel[] }>("models", undefined, signal)
    .catch((err) => (noRegistry(err) ? { models: [] } : Promise.reject(err))), []);
  const list = models.data?.models ?? [];
  return (
    <div class="page models-page">
      <h1>Models</h1>
      {models.error ? <ErrorBox error={models.error} what="models" /> : null}
      {!models.data && !models.error ? <Loading what="models" /> : null}
      {models.data && !list.length ? (
        <Empty>
          No registered models yet. Register a run's artifact as a version with
          <code> flightlog models register RUN model/weights.npz NAME</code> or
          <code> run.register_model("model/weights.npz", "NAME")</code>.
        </Empty>
      ) : null}
      {list.length ? (
        <table class="table models-table">
          <thead>
            <tr><th>Model</th><th>Project</th><th class="num">Latest</th><th>Aliases</th><th>Description</th><th>Created</th></tr>
          </thead>
          <tbody>
            {list.map((m) => (
              <tr key={`${m.project}/${m.name}`} data-model={m.name}>
                <td><Link to={paths.model(m.name, m.project)} class="strong">{m.name}</Link></td>
                <td><Link to={paths.runs(m.project)}>{m.project}</Link></td>
                <td class="num">v{m.latest_version}</td>
                <td>
                  {Object.entries(m.aliases).sort().map(([a, v]) => (
                    <span key={a} class="chip chip-alias" data-alias={a}>@{a} → v{v}</span>
                  ))}
                </td>
                <td class="muted">{m.description ?? ""}</td>
                <td title={fmtTime(m.created)}>{fmtAgo(m.created)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

export function ModelPage({ name, query }: { name: string; query: URLSearchParams }) {
  const project = query.get("project");
  const model = useAsync((signal) => get<RegisteredModel>(`models/${encodeURIComponent(name)}`, { project }, signal), [name, project]);
  const history = useAsync((signal) => get<{ history: AliasChange[] }>(`models/${encodeURIComponent(name)}/alias-history`, { project }, signal), [name, project]);
  if (model.error) return <div class="page"><h1>{name}</h1><ErrorBox error={model.error} what={`model ${name}`} /></div>;
  if (!model.data) return <div class="page"><Loading what={`model ${name}`} /></div>;
  const m = model.data;
  const versions = (m.versions ?? []).slice().sort((a, b) => b.version - a.version);
  return (
    <div class="page model-page">
      <div class="page-head">
        <h1>{m.name}</h1>
        <span class="muted">in <Link to={paths.runs(m.project)}>{m.project}</Link> · {versions.length} version{versions.length === 1 ? "" : "s"}</span>
      </div>
      {m.description ? <p class="model-description">{m.description}</p> : null}
      <div class="model-grid">
        <Card title="Aliases" id="aliases">
          {Object.keys(m.aliases).length ? (
            <table class="table compact alias-table">
              <tbody>
                {Object.entries(m.aliases).sort().map(([a, v]) => (
                  <tr key={a} data-alias={a}>
                    <th><span class="chip chip-alias">@{a}</span>{m.protected_aliases.includes(a) ? <span class="chip" title="only an admin token may move it">protected</span> : null}</th>
                    <td>v{v}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : <Empty>No aliases. Point one at a version with <code>flightlog models alias {m.name}@production 1</code>.</Empty>}
          <h3 class="subhead">History</h3>
          {history.error ? <ErrorBox error={history.error} what="alias history" /> : null}
          {history.data ? <AliasHistory changes={history.data.history} /> : !history.error ? <Loading what="alias history" /> : null}
        </Card>
        <Card title="About" id="about">
          <KV rows={[
            ["Project", m.project],
            ["Created", fmtTime(m.created)],
            ["Latest version", `v${m.latest_version}`],
            ["Protected aliases", m.protected_aliases.length ? m.protected_aliases.map((a) => `@${a}`).join(", ") : "none"],
            ["Tags", Object.keys(m.tags).length ? <span class="model-tags">{Object.entries(m.tags).sort().map(([k, v]) => <span key={k} class="chip">{k}={v}</span>)}</span> : "none"],
          ]} />
        </Card>
      </div>
      <Card title="Versions" id="versions">
        <table class="table versions-table">
          <thead>
            <tr><th>Version</th><th>Aliases</th><th>Run</th><th>Artifact</th><th>Digest</th><th class="num">Size</th><th>Created</th><th>By</th></tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td class="strong">v{v.version}</td>
                <td><AliasBadges aliases={v.aliases.slice()} /></td>
                <td><Link to={paths.run(m.project, v.run_id)} class="mono">{shortId(v.run_id)}</Link></td>
                <td class="mono">{v.artifact_path}{v.source !== "artifact" ? <span class="chip">{v.source}</span> : null}</td>
                <td class="mono" title={v.digest ?? ""}>{v.digest ? v.digest.slice(0, 12) : "—"}</td>
                <td class="num">{fmtBytes(v.size)}</td>
                <td title={fmtTime(v.created)}>{fmtAgo(v.created)}</td>
                <td>{v.created_by ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Card title="Lineage" id="lineage">
        <p class="muted small">data snapshot → run → version: what each version was trained on.</p>
        <div class="lineage-list">
          {versions.slice(0, 20).map((v) => <VersionLineageRow key={v.version} model={m} version={v} />)}
        </div>
      </Card>
    </div>
  );
}

function AliasHistory({ changes }: { changes: AliasChange[] }) {
  if (!changes.length) return <Empty>No alias has moved yet.</Empty>;
  const rows = changes.slice().sort((a, b) => (a.time < b.time ? 1 : -1));
  return (
    <table class="table compact alias-history">
      <thead><tr><th>When</th><th>Alias</th><th>Move</th><th>Who</th></tr></thead>
      <tbody>
        {rows.map((c, i) => (
          <tr key={i} data-alias={c.alias}>
            <td title={fmtTime(c.time)}>{fmtTime(c.time)}</td>
            <td><span class="chip chip-alias">@{c.alias}</span></td>
            <td class="alias-move">
              {c.from_version === null ? "set" : `v${c.from_version}`} → {c.to_version === null ? "removed" : `v${c.to_version}`}
            </td>
            <td>{c.actor ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function VersionLineageRow({ model, version }: { model: RegisteredModel; version: ModelVersion }) {
  const lin = useAsync((signal) => get<VersionLineage>(
    `models/${encodeURIComponent(model.name)}/versions/${version.version}`, { project: model.project, lineage: true }, signal,
  ), [model.name, model.project, version.version]);
  return (
    <div class="lineage-row" data-version={version.version}>
      <div class="lineage-head"><strong>v{version.version}</strong></div>
      {lin.error ? <ErrorBox error={lin.error} what={`lineage of v${version.version}`} /> : null}
      {!lin.data && !lin.error ? <Loading what="lineage" /> : null}
      {lin.data ? (
        <div class="lineage-flow">
          <div class="lineage-inputs">
            {lin.data.inputs.length ? lin.data.inputs.map((i) => (
              <div key={i.artifact.id} class="lineage-input" title={i.artifact.sha256 ?? ""}>
                <span class="chip chip-input">input</span> <span class="mono">{i.artifact.path}</span>
                <span class="muted small"> {fmtBytes(i.artifact.size)}{i.artifact.sha256 ? ` · ${i.artifact.sha256.slice(0, 12)}` : ""}</span>
                {i.produced_by.length ? <span class="muted small"> · from {i.produced_by.map((r) => <Link key={r} to={paths.run(model.project, r)} class="mono">{shortId(r)} </Link>)}</span> : null}
              </div>
            )) : <span class="muted small">no inputs logged</span>}
            {lin.data.manifests.map((mf, k) => (
              <div key={`m${k}`} class="lineage-manifest muted small">manifest {mf.name ?? ""}: {fmtValue(summarizeManifest(mf.data))}</div>
            ))}
          </div>
          <span class="lineage-arrow" aria-hidden="true">→</span>
          <div class="lineage-run">
            <Link to={paths.run(lin.data.run.project, lin.data.run.id)} class="mono">{shortId(lin.data.run.id)}</Link>
            {lin.data.run.name ? <span> {lin.data.run.name}</span> : null} <StatusBadge status={lin.data.run.status} />
          </div>
          <span class="lineage-arrow" aria-hidden="true">→</span>
          <div class="lineage-version"><span class="mono">{version.artifact_path}</span> <strong>v{version.version}</strong></div>
        </div>
      ) : null}
    </div>
  );
}

/** A manifest's short form: its file count and rows when it says them, else its keys. */
function summarizeManifest(data: Record<string, unknown> | null): string {
  if (!data) return "—";
  const parts: string[] = [];
  for (const k of ["files", "rows", "digest", "sha256"]) {
    const v = data[k];
    if (typeof v === "number" || typeof v === "string") parts.push(`${k} ${typeof v === "string" && v.length > 16 ? v.slice(0, 12) : v}`);
    else if (Array.isArray(v)) parts.push(`${v.length} ${k}`);
  }
  return parts.length ? parts.join(", ") : Object.keys(data).slice(0, 6).join(", ");
}
