// The runs table's data: pages of runs fetched on demand (server-side paging by offset), so a
// 10,000-run project costs one page per screenful. Grouping orders by the group key first, so
// each group is contiguous and headers can be placed as pages arrive.
import { ApiError, get } from "../../api";
import type { Json, Run, RunPage } from "../../types";

export const PAGE = 100;

export interface Query {
  project: string;
  filter: string;
  orderBy: string;
  /** training: serving replicas left out (the table's default); all: every run */
  kind?: "training" | "all";
}

export class RunPages {
  pages = new Map<number, Run[]>();
  pending = new Set<number>();
  exact: number | null;
  loadedEnd = 0;
  lastFull = true;
  error: ApiError | Error | null = null;
  private ctrl = new AbortController();

  constructor(public query: Query, knownTotal: number | null, private changed: () => void) {
    this.exact = query.filter.trim() ? null : knownTotal; // the count of the kind of runs asked for
  }

  get count(): number {
    if (this.exact !== null) return this.exact;
    if (this.error) return this.loadedEnd;
    return this.loadedEnd + (this.lastFull ? PAGE : 0);
  }

  /** How many runs from the first are loaded without a gap. */
  get prefix(): number {
    let n = 0;
    for (let p = 0; ; p++) {
      const page = this.pages.get(p);
      if (!page) return n;
      n += page.length;
      if (page.length < PAGE) return n;
    }
  }

  row(i: number): Run | undefined {
    return this.pages.get(Math.floor(i / PAGE))?.[i % PAGE];
  }

  ensure(start: number, end: number): void {
    const last = Math.min(end, Math.max(this.count, 1));
    for (let p = Math.floor(start / PAGE); p * PAGE < last; p++) this.fetch(p);
  }

  fetch(p: number, refresh = false): void {
    if (this.pending.has(p) || (!refresh && this.pages.has(p)) || (this.error && !refresh)) return;
    this.pending.add(p);
    const q = this.query;
    get<RunPage>("runs", {
      project: q.project, filter: q.filter.trim() || undefined, order_by: q.orderBy || undefined, limit: PAGE, offset: p * PAGE,
      kind: q.kind,
    }, this.ctrl.signal).then((page) => {
      this.pending.delete(p);
      this.pages.set(p, page.runs);
      const end = p * PAGE + page.runs.length;
      if (page.runs.length < PAGE) this.exact = this.exact === null || page.runs.length ? end : Math.min(this.exact, end);
      if (end >= this.loadedEnd) {
        this.loadedEnd = end;
        this.lastFull = page.runs.length === PAGE;
      }
      this.error = null;
      this.changed();
    }, (err: Error) => {
      this.pending.delete(p);
      if (err.name === "AbortError") return;
      this.error = err;
      this.changed();
    });
  }

  refresh(start: number, end: number): void {
    for (let p = Math.floor(start / PAGE); p * PAGE < Math.min(end, this.count); p++) this.fetch(p, true);
  }

  loaded(): Run[] {
    const out: Run[] = [];
    for (const page of this.pages.values()) out.push(...page);
    return out;
  }

  close(): void {
    this.ctrl.abort();
  }
}

/** A field of the filter language for a param, tag or metric key (backquoted when needed). */
export function field(prefix: "params" | "tags" | "metrics", key: string): string {
  if (/^[A-Za-z0-9_./-]+$/.test(key)) return `${prefix}.${key}`;
  return `${prefix}.\`${key.replace(/\\/g, "\\\\").replace(/`/g, "\\`")}\``;
}

/** `params.lr` → ["params", "lr"]; backquoted keys are unquoted. */
export function splitField(f: string): ["params" | "tags" | "metrics" | null, string] {
  const m = /^(params|tags|metrics)\.(.+)$/.exec(f);
  if (!m) return [null, f];
  let key = m[2];
  const q = /^`((?:[^`\\]|\\.)*)`$/.exec(key);
  if (q) key = q[1].replace(/\\(.)/g, "$1");
  return [m[1] as "params" | "tags" | "metrics", key];
}

export function valueOf(run: Run, f: string): Json | undefined {
  const [prefix, key] = splitField(f);
  if (prefix === "params") return run.params[key];
  if (prefix === "tags") return run.tags[key];
  if (prefix === "metrics") return run.metrics[key] as Json;
  return (run as unknown as Record<string, Json>)[f];
}

/** Columns to show before the user picks: params that differ between runs, then metrics. */
export function defaultColumns(runs: Run[]): string[] {
  const params = new Map<string, Set<string>>();
  const metrics = new Map<string, number>();
  for (const r of runs) {
    for (const [k, v] of Object.entries(r.params)) {
      const s = params.get(k) ?? new Set();
      s.add(JSON.stringify(v));
      params.set(k, s);
    }
    for (const k of Object.keys(r.metrics)) metrics.set(k, (metrics.get(k) ?? 0) + 1);
  }
  const varying = [...params.entries()].filter(([, s]) => s.size > 1).map(([k]) => k);
  const pick = (varying.length ? varying : [...params.keys()]).slice(0, 4).map((k) => field("params", k));
  const score = (k: string) => (/loss|acc|f1|auc|score|err/i.test(k) ? 0 : 1);
  const ms = [...metrics.entries()].sort((a, b) => score(a[0]) - score(b[0]) || b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 4).map(([k]) => field("metrics", k));
  return [...pick, ...ms];
}

export function availableKeys(runs: Run[]): { params: string[]; tags: string[]; metrics: string[] } {
  const p = new Set<string>();
  const t = new Set<string>();
  const m = new Set<string>();
  for (const r of runs) {
    Object.keys(r.params).forEach((k) => p.add(k));
    Object.keys(r.tags).forEach((k) => t.add(k));
    Object.keys(r.metrics).forEach((k) => m.add(k));
  }
  const sort = (s: Set<string>) => [...s].sort((a, b) => a.localeCompare(b));
  return { params: sort(p), tags: sort(t), metrics: sort(m) };
}

/** One row of the nested table: a run (by its index in the listing) and how deep it sits. */
export interface NestedRow {
  kind: "run";
  index: number;
  depth: number;
  children: number;
}

/** The listing with child runs (pipeline steps, sweep trials) under their parent: over the part
 *  loaded from the top, a run whose parent is loaded too leaves its own place and, when the
 *  parent is in `expanded`, follows it (oldest first, as a pipeline ran them). A child whose
 *  parent is not (yet) loaded keeps its place; rows past the loaded part map one to one. Null
 *  when nothing loaded has its parent loaded: the table stays exactly the flat listing. */
export function nestedRows(pages: RunPages, expanded: Set<string>): NestedRow[] | null {
  const prefix = pages.prefix;
  const at = new Map<string, number>();
  for (let i = 0; i < prefix; i++) at.set(pages.row(i)!.id, i);
  const kids = new Map<string, number[]>();
  for (let i = 0; i < prefix; i++) {
    const r = pages.row(i)!;
    if (r.parent_id && r.parent_id !== r.id && at.has(r.parent_id)) {
      const list = kids.get(r.parent_id) ?? [];
      list.push(i);
      kids.set(r.parent_id, list);
    }
  }
  if (!kids.size) return null;
  const created = (i: number) => pages.row(i)!.created ?? "";
  const out: NestedRow[] = [];
  const seen = new Set<number>();
  const visit = (i: number, depth: number) => {
    if (seen.has(i)) return; // a loop of parents: each run once
    seen.add(i);
    const children = kids.get(pages.row(i)!.id) ?? [];
    out.push({ kind: "run", index: i, depth, children: children.length });
    if (!expanded.has(pages.row(i)!.id)) return;
    // oldest first; runs created in the same millisecond keep the store's order, which is newest
    // first (the default sort, whose ties the store breaks at full precision): reversed here
    [...children].sort((a, b) => created(a).localeCompare(created(b)) || b - a).forEach((c) => visit(c, depth + 1));
  };
  for (let i = 0; i < prefix; i++) {
    const parent = pages.row(i)!.parent_id;
    if (!parent || parent === pages.row(i)!.id || !at.has(parent)) visit(i, 0);
  }
  for (let i = prefix; i < pages.count; i++) out.push({ kind: "run", index: i, depth: 0, children: 0 });
  return out;
}
