// Artifacts: browse a run's inputs and outputs, download them, preview text, JSON, CSV and
// images (fetched as data, shown as text or a blob image: an artifact never runs as a page),
// and the lineage graph: inputs → run → outputs → the later runs that used them.
import { useEffect, useMemo, useState } from "preact/hooks";
import { apiUrl, get, pathSegments, request } from "../../api";
import { Card, Empty, ErrorBox, Loading, Spinner } from "../../components/ui";
import { fmtBytes, fmtTime, shortId } from "../../format";
import { useAsync, useWidth } from "../../hooks";
import { href, navigate, paths, setQuery } from "../../router";
import { colorFor } from "../../theme";
import type { Artifact, Lineage, Run } from "../../types";

const PREVIEW_BYTES = 1 << 20;
const IMAGES: Record<string, string> = {
  png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", webp: "image/webp", bmp: "image/bmp", svg: "image/svg+xml", avif: "image/avif",
};
const TEXT = new Set(["txt", "log", "md", "rst", "py", "yaml", "yml", "toml", "cfg", "ini", "sh", "html", "htm", "xml", "js", "ts", "sql", "r", "ipynb", "out", "err", "conf", "env"]);

export function kindOf(path: string): "image" | "json" | "jsonl" | "csv" | "tsv" | "text" | "binary" {
  const ext = (path.split("/").pop() ?? "").split(".").pop()?.toLowerCase() ?? "";
  if (IMAGES[ext]) return "image";
  if (ext === "json") return "json";
  if (ext === "jsonl" || ext === "ndjson") return "jsonl";
  if (ext === "csv") return "csv";
  if (ext === "tsv") return "tsv";
  if (TEXT.has(ext) || !ext.length) return "text";
  return "binary";
}

export function downloadable(a: Artifact): boolean {
  return !!a.uri && a.uri.startsWith("cas:sha256/");
}

export function artifactUrl(runId: string, path: string): string {
  return apiUrl(`runs/${encodeURIComponent(runId)}/artifacts/${pathSegments(path)}`);
}

/** CSV (RFC 4180 quoting) into rows, at most `max`. */
export function parseCsv(text: string, sep = ",", max = 200): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length && rows.length < max; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === sep) {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if ((cell || row.length) && rows.length < max) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

interface Loaded {
  kind: ReturnType<typeof kindOf>;
  text?: string;
  url?: string;
  truncated: boolean;
  size: number | null;
}

function Preview({ run, art }: { run: Run; art: Artifact }) {
  const [state, setState] = useState<Loaded | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const kind = kindOf(art.path);
  useEffect(() => {
    setState(null);
    setError(null);
    if (!downloadable(art) || kind === "binary") return;
    const ctrl = new AbortController();
    let url: string | null = null;
    const path = `runs/${encodeURIComponent(run.id)}/artifacts/${pathSegments(art.path)}`;
    const headers: Record<string, string> = kind === "image" ? {} : { Range: `bytes=0-${PREVIEW_BYTES - 1}` };
    request("GET", path, { headers, signal: ctrl.signal }).then(async (res) => {
      const blob = await res.blob();
      const size = art.size;
      if (kind === "image") {
        url = URL.createObjectURL(new Blob([blob], { type: IMAGES[(art.path.split(".").pop() ?? "").toLowerCase()] }));
        setState({ kind, url, truncated: false, size });
        return;
      }
      const bytes = blob.size > PREVIEW_BYTES ? blob.slice(0, PREVIEW_BYTES) : blob;
      const text = new TextDecoder("utf-8", { fatal: false }).decode(await bytes.arrayBuffer());
      setState({ kind, text, truncated: (size ?? blob.size) > PREVIEW_BYTES, size });
    }, (err: Error) => err.name !== "AbortError" && setError(err));
    return () => {
      ctrl.abort();
      if (url) URL.revokeObjectURL(url);
    };
  }, [run.id, art.id]);

  if (!downloadable(art)) {
    return (
      <p class="muted">
        The content was not uploaded{art.uri ? <>: it stays at <code>{art.uri}</code> on the machine that logged it</> : null}.
        {art.sha256 ? <> SHA-256 <code>{art.sha256}</code>.</> : null}
      </p>
    );
  }
  if (kind === "binary") return <p class="muted">No preview for this kind of file: download it.</p>;
  if (error) return <ErrorBox error={error} what="the preview" />;
  if (!state) return <Loading what="the preview" />;
  const note = state.truncated ? <p class="muted small">The first {fmtBytes(PREVIEW_BYTES)} of {fmtBytes(state.size)}.</p> : null;
  if (state.kind === "image") return <div class="preview-image"><img src={state.url} alt={art.path} /></div>;
  if (state.kind === "json" && !state.truncated) {
    let pretty = state.text ?? "";
    try {
      pretty = JSON.stringify(JSON.parse(pretty), null, 2);
    } catch {
      /* not valid JSON: show it as it is */
    }
    return <pre class="preview-text" data-preview="json">{pretty}</pre>;
  }
  if (state.kind === "jsonl") {
    const lines = (state.text ?? "").split("\n").slice(0, 500).map((l) => {
      try {
        return JSON.stringify(JSON.parse(l));
      } catch {
        return l;
      }
    });
    return <>{note}<pre class="preview-text" data-preview="jsonl">{lines.join("\n")}</pre></>;
  }
  if (state.kind === "csv" || state.kind === "tsv") {
    const rows = parseCsv(state.text ?? "", state.kind === "tsv" ? "\t" : ",", 201);
    const [head, ...body] = rows;
    return (
      <>
        {note}
        <div class="preview-table-wrap">
          <table class="table compact preview-table" data-preview="csv">
            <thead><tr>{(head ?? []).map((h, i) => <th key={i}>{h}</th>)}</tr></thead>
            <tbody>{body.map((r, i) => <tr key={i}>{r.map((c, j) => <td key={j}>{c}</td>)}</tr>)}</tbody>
          </table>
        </div>
        {body.length >= 200 ? <p class="muted small">The first 200 rows.</p> : null}
      </>
    );
  }
  return <>{note}<pre class="preview-text" data-preview="text">{state.text}</pre></>;
}

export function Artifacts({ run, query }: { run: Run; query: URLSearchParams }) {
  const arts = useAsync((signal) => get<{ artifacts: Artifact[] }>(`runs/${run.id}/artifacts`, undefined, signal), [run.id, run.status]);
  const lin = useAsync((signal) => get<Lineage>(`runs/${run.id}/lineage`, undefined, signal), [run.id, run.status]);
  const [search, setSearch] = useState("");
  const selected = query.get("path");
  const list = arts.data?.artifacts ?? [];
  const shown = list.filter((a) => !search || a.path.toLowerCase().includes(search.toLowerCase()) || (a.kind ?? "").includes(search.toLowerCase()));
  const current = selected ? list.slice().reverse().find((a) => a.path === selected) : undefined;
  return (
    <div class="artifacts-tab">
      <div class="grid-2 artifacts-grid">
        <Card title={`Artifacts (${list.length})`} actions={list.length > 8 ? (
          <input type="search" class="small-input" placeholder="Find" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        ) : null}>
          {arts.error ? <ErrorBox error={arts.error} what="artifacts" /> : null}
          {!arts.data && !arts.error ? <Loading what="artifacts" /> : null}
          {arts.data && !list.length ? <Empty>No artifacts. Log them with <code>run.log_artifact(path)</code> or <code>run.log_input(path)</code>.</Empty> : null}
          {shown.length ? (
            <table class="table compact artifact-table">
              <thead><tr><th>Role</th><th>Path</th><th>Kind</th><th class="num">Size</th><th class="num">Step</th><th /></tr></thead>
              <tbody>
                {shown.map((a) => (
                  <tr key={a.id} class={current?.id === a.id ? "selected" : ""} data-artifact={a.path}>
                    <td><span class={`chip chip-${a.role}`}>{a.role}</span></td>
                    <td class="mono">
                      <button type="button" class="linkish" onClick={() => setQuery({ path: a.path })} title="Preview">{a.path}</button>
                    </td>
                    <td>{a.kind ?? ""}</td>
                    <td class="num">{fmtBytes(a.size)}</td>
                    <td class="num">{a.step ?? ""}</td>
                    <td>{downloadable(a) ? <a class="btn btn-small" href={artifactUrl(run.id, a.path)} download={a.path.split("/").pop()}>Download</a> : <span class="muted small" title={a.uri ?? ""}>not uploaded</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </Card>
        <Card title={current ? <span class="mono">{current.path}</span> : "Preview"} id="preview"
          actions={current && downloadable(current) ? <a class="btn btn-small" href={artifactUrl(run.id, current.path)} download={current.path.split("/").pop()}>Download</a> : null}>
          {current ? (
            <>
              <p class="muted small">{current.role} · {current.kind ?? "file"} · {fmtBytes(current.size)} · {fmtTime(current.time)}{current.sha256 ? ` · sha256 ${current.sha256.slice(0, 16)}…` : ""}{current.source ? ` · from ${current.source}` : ""}</p>
              {current.meta && current.meta.file_count !== undefined ? (
                <p class="small">Manifest: {String(current.meta.file_count)} files, {fmtBytes(current.meta.total_size as number)}{current.meta.digest ? <> · <span class="mono">{String(current.meta.digest).slice(0, 20)}…</span></> : null}</p>
              ) : null}
              <Preview run={run} art={current} />
            </>
          ) : <p class="muted">Pick an artifact to preview it.</p>}
        </Card>
      </div>
      <Card title="Lineage" id="lineage">
        {lin.error ? <ErrorBox error={lin.error} what="lineage" /> : null}
        {lin.data ? <LineageGraph run={run} lineage={lin.data} /> : !lin.error ? <Loading what="lineage" /> : null}
      </Card>
    </div>
  );
}

interface GNode {
  id: string;
  col: number;
  label: string;
  sub: string;
  kind: "run" | "self" | "input" | "output";
  to?: string;
  color: string;
}

function LineageGraph({ run, lineage }: { run: Run; lineage: Lineage }) {
  const [ref, width] = useWidth<HTMLDivElement>();
  const related = useMemo(() => {
    const ids = new Set<string>();
    lineage.inputs.forEach((i) => i.produced_by.forEach((r) => ids.add(r)));
    lineage.outputs.forEach((o) => o.used_by.forEach((r) => ids.add(r)));
    if (lineage.parent) ids.add(lineage.parent);
    lineage.children.forEach((c) => ids.add(c));
    return [...ids].slice(0, 24);
  }, [lineage]);
  const runs = useAsync(async (signal) => {
    const out: Record<string, Run> = {};
    await Promise.all(related.map((id) => get<Run>(`runs/${id}`, undefined, signal).then((r) => (out[id] = r), () => undefined)));
    return out;
  }, [related.join(",")]);

  const nodes: GNode[] = [];
  const edges: [string, string][] = [];
  const runNode = (id: string, col: number, role: string) => {
    const key = `run:${id}:${col}`;
    if (!nodes.some((n) => n.id === key)) {
      const r = runs.data?.[id];
      nodes.push({ id: key, col, kind: "run", label: r?.name || shortId(id), sub: `${role} · ${r ? r.status : shortId(id)}`, to: r ? paths.run(r.project, r.id) : `runs/${id}`, color: colorFor(role) });
    }
    return key;
  };
  const self = "self";
  nodes.push({ id: self, col: 2, kind: "self", label: run.name || shortId(run.id), sub: `this run · ${run.status}`, color: "var(--accent)" });
  if (lineage.parent) edges.push([runNode(lineage.parent, 0, "parent"), self]);
  lineage.inputs.forEach(({ artifact: a, produced_by }) => {
    const key = `in:${a.id}`;
    nodes.push({ id: key, col: 1, kind: "input", label: a.path, sub: `${a.kind ?? "input"} · ${fmtBytes(a.size)}`, color: colorFor("input") });
    edges.push([key, self]);
    produced_by.slice(0, 6).forEach((r) => edges.push([runNode(r, 0, "made it"), key]));
  });
  const grouped = new Map<string, number>();
  lineage.outputs.forEach(({ artifact: a, used_by }) => {
    const sameKind = lineage.outputs.filter((o) => o.artifact.kind === a.kind && !o.used_by.length).length;
    if (!used_by.length && sameKind > 3) {
      const k = `group:${a.kind}`;
      if (!grouped.has(k)) {
        grouped.set(k, sameKind);
        nodes.push({ id: k, col: 3, kind: "output", label: `${sameKind} × ${a.kind ?? "file"}`, sub: "outputs", color: colorFor("output") });
        edges.push([self, k]);
      }
      return;
    }
    const key = `out:${a.id}`;
    nodes.push({ id: key, col: 3, kind: "output", label: a.path, sub: `${a.kind ?? "output"} · ${fmtBytes(a.size)}`, color: colorFor("output") });
    edges.push([self, key]);
    used_by.slice(0, 6).forEach((r) => edges.push([key, runNode(r, 4, "used it")]));
  });
  lineage.children.slice(0, 12).forEach((c) => edges.push([self, runNode(c, 4, "child")]));

  const cols = [0, 1, 2, 3, 4].map((c) => nodes.filter((n) => n.col === c));
  const used = cols.map((c) => c.length > 0);
  const colIdx = used.map((_, i) => used.slice(0, i).filter(Boolean).length);
  const nCols = used.filter(Boolean).length;
  const W = Math.max(480, width - 8);
  const NW = Math.min(200, Math.floor((W - 24) / nCols) - 36);
  const NH = 38;
  const GAP = 12;
  const gapX = nCols > 1 ? (W - NW * nCols) / (nCols - 1) : 0;
  const H = Math.max(...cols.map((c) => c.length)) * (NH + GAP) + GAP;
  const pos = new Map<string, { x: number; y: number }>();
  cols.forEach((c, ci) => {
    const offset = (H - c.length * (NH + GAP)) / 2;
    c.forEach((n, i) => pos.set(n.id, { x: colIdx[ci] * (NW + gapX), y: offset + i * (NH + GAP) + GAP / 2 }));
  });
  const trunc = (s: string, n: number) => (s.length > n ? "…" + s.slice(s.length - n + 1) : s);
  const chars = Math.max(8, Math.floor(NW / 7));
  if (nodes.length === 1) return <p class="muted">No inputs, outputs or related runs recorded.</p>;
  return (
    <div ref={ref} class="lineage-wrap">
      <svg class="lineage" width={W} height={H} role="img" aria-label="lineage graph">
        {edges.map(([a, b], i) => {
          const p = pos.get(a);
          const q = pos.get(b);
          if (!p || !q) return null;
          const x1 = p.x + NW;
          const y1 = p.y + NH / 2;
          const x2 = q.x;
          const y2 = q.y + NH / 2;
          const mx = (x1 + x2) / 2;
          return <path key={i} d={`M${x1} ${y1} C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`} class="lineage-edge" />;
        })}
        {nodes.map((n) => {
          const p = pos.get(n.id)!;
          const body = (
            <g class={`lineage-node lineage-${n.kind}`} data-node={n.label}>
              <rect x={p.x} y={p.y} width={NW} height={NH} rx={6} style={{ stroke: n.color }} />
              <text x={p.x + 8} y={p.y + 16} class="lineage-label">{trunc(n.label, chars)}</text>
              <text x={p.x + 8} y={p.y + 31} class="lineage-sub">{trunc(n.sub, chars + 4)}</text>
              <title>{`${n.label}\n${n.sub}`}</title>
            </g>
          );
          return n.to ? (
            <a key={n.id} href={href(n.to)} onClick={(e: MouseEvent) => {
              if (e.button !== 0 || e.metaKey || e.ctrlKey) return;
              e.preventDefault();
              navigate(n.to!);
            }}>{body}</a>
          ) : <g key={n.id}>{body}</g>;
        })}
      </svg>
      {runs.loading && related.length ? <Spinner label="loading related runs" /> : null}
    </div>
  );
}
