// The runs table: server-side filtering (the filter language), sorting and paging; virtualized
// rows; params, tags and latest metrics as columns; grouping; child runs nested under their
// parent; a NaN badge and the failure's cause on each row; selection for comparing.
import type { JSX } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError, get, num } from "../api";
import { AlertChip, useFiring } from "../components/Alerts";
import { VirtualList } from "../components/VirtualList";
import { StatusBadge, Toggle } from "../components/ui";
import { fmtDuration, fmtNum, fmtTime, fmtValue, shortId } from "../format";
import { useInterval } from "../hooks";
import { Link, navigate, paths, setQuery } from "../router";
import type { Project, Run } from "../types";
import { ColumnPicker } from "./runs/ColumnPicker";
import { availableKeys, defaultColumns, field, nestedRows, type NestedRow, PAGE, RunPages, splitField, valueOf } from "./runs/model";

const ROW_H = 34;
const HEAD_H = 38;
const MAX_COMPARE = 10;

interface Col {
  id: string;
  label: string;
  kind?: string;
  title?: string;
  width: string;
  sort?: string;
  cls?: string;
  cell: (r: Run) => JSX.Element | string;
}

type Item = { kind: "run"; index: number; depth?: number; children?: number } | { kind: "group"; value: string; count: number; more: boolean; runs: Run[] };
const FIXED_COLS = 6; // select, status, cause, name, started, duration: then the chosen columns

/** The NaN badge: the run logged a NaN or infinite value (a "succeeded" run may have diverged). */
function NanBadge({ names }: { names?: string[] }) {
  if (!names || !names.length) return null;
  const shown = names.slice(0, 5).join(", ") + (names.length > 5 ? ` and ${names.length - 5} more` : "");
  return <span class="chip chip-nan" data-nonfinite={names.join(",")} title={`NaN or infinite values in ${shown}`}>NaN</span>;
}

export function Runs({ project, query }: { project: string; query: URLSearchParams }) {
  const filter = query.get("filter") ?? "";
  const sort = query.get("sort") ?? "-created";
  const group = query.get("group") ?? "";
  const colsParam = query.get("cols");
  const flat = query.get("flat") === "1";
  const withServing = query.get("serving") === "1"; // serving replicas are runs of their own kind, hidden by default
  const kind = withServing ? "all" : "training";

  const [total, setTotal] = useState<number | null | undefined>(undefined);
  const [tick, setTick] = useState(0);
  const [selected, setSelected] = useState<string[]>([]);
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [draft, setDraft] = useState(filter);
  const firing = useFiring(project);
  const range = useRef<[number, number]>([0, 40]);
  useEffect(() => setDraft(filter), [filter]);

  const totalFor = useRef<string | null>(null); // the kind of runs `total` counts
  useEffect(() => {
    totalFor.current = null;
    setTotal(undefined);
    get<{ projects: Project[] }>("projects").then(
      (d) => {
        const p = d.projects.find((x) => x.name === project);
        totalFor.current = kind;
        setTotal(p ? p.runs - (kind === "all" ? 0 : p.serving_runs ?? 0) : 0); // the runs of the kind shown
      },
      () => setTotal(null),
    );
  }, [project, kind]);

  const orderBy = group ? `${group},${sort}` : sort;
  const pages = useMemo(
    () => new RunPages({ project, filter, orderBy, kind }, totalFor.current === kind ? total ?? null : null,
      () => setTick((t) => t + 1)),
    [project, filter, orderBy, kind],
  );
  useEffect(() => {
    // the project's run count sizes the scrollbar of an unfiltered table before the last page is read
    if (total !== undefined && total !== null && totalFor.current === kind && !filter.trim() && pages.exact === null && pages.lastFull) {
      pages.exact = Math.max(total, pages.loadedEnd);
      setTick((t) => t + 1);
    }
  }, [pages, total]);
  useEffect(() => {
    pages.ensure(range.current[0], range.current[1] + PAGE);
    return () => pages.close();
  }, [pages]);

  const firstPage = pages?.pages.get(0);
  const autoCols = useMemo(() => (firstPage ? defaultColumns(firstPage) : []), [firstPage]);
  const chosen = colsParam === null ? autoCols : colsParam.split(",").filter(Boolean);

  // refresh what is in view every 10 s: running runs move on
  useInterval(() => pages?.refresh(range.current[0], range.current[1] + 1), 10_000);

  const setSort = (key: string) => {
    const cur = sort.replace(/^[-+]/, "");
    const next = cur === key ? (sort.startsWith("-") ? key : `-${key}`) : (["name", "status"].includes(key) ? key : `-${key}`);
    setQuery({ sort: next === "-created" ? null : next });
  };

  const toggleSelect = (id: string) =>
    setSelected((s) => (s.includes(id) ? s.filter((x) => x !== id) : s.length >= MAX_COMPARE ? s : [...s, id]));

  const cols: Col[] = [
    {
      id: "select", label: "", width: "38px", cls: "c-select",
      cell: (r) => (
        <input type="checkbox" aria-label={`select run ${r.name ?? r.id}`} checked={selected.includes(r.id)}
          disabled={!selected.includes(r.id) && selected.length >= MAX_COMPARE} onChange={() => toggleSelect(r.id)} />
      ),
    },
    {
      id: "status", label: "Status", width: "176px", sort: "status",
      cell: (r) => <><StatusBadge status={r.status} reason={r.end_reason} /><NanBadge names={r.nonfinite_metrics} /><AlertChip alerts={firing.get(r.id)} /></>,
    },
    {
      id: "cause", label: "Cause", width: "150px", cls: "c-cause",
      cell: (r) => r.cause ? (
        <span class="cause" data-cause={r.cause} title={`${r.cause}: from how the run ended (flightlog diagnose ${shortId(r.id)} for the evidence)`}>{r.cause}</span>
      ) : "",
    },
    {
      id: "name", label: "Name", width: "minmax(210px, 1.5fr)", sort: "name", cls: "c-name",
      cell: (r) => (
        <Link to={paths.run(r.project, r.id)} class="run-link" title={r.id}>
          <span class="run-name">{r.name || "(unnamed)"}</span> <span class="muted mono small">{shortId(r.id)}</span>
        </Link>
      ),
    },
    { id: "started", label: "Started", width: "170px", sort: "created", cell: (r) => fmtTime(r.started ?? r.created) },
    { id: "duration", label: "Duration", width: "96px", sort: "duration", cls: "num", cell: (r) => fmtDuration(r.duration) },
    ...chosen.map((f): Col => {
      const [prefix, key] = splitField(f);
      return {
        id: f, label: key, title: f, kind: prefix === "metrics" ? "metric" : prefix === "params" ? "param" : "tag", width: "minmax(110px, 1fr)", sort: f, cls: prefix === "metrics" ? "num" : prefix === "params" ? "param" : "",
        cell: (r) => {
          const v = valueOf(r, f);
          if (prefix === "metrics" && (typeof v === "string" || (typeof v === "number" && !Number.isFinite(v)))) {
            return <span class="nonfinite-value" data-nonfinite-value="true">{fmtNum(v)}</span>;
          }
          return prefix === "metrics" ? fmtNum(v) : fmtValue(v);
        },
      };
    }),
  ];
  const template = cols.map((c) => c.width).join(" ");
  const minWidth = `${38 + 176 + 150 + 210 + 170 + 96 + chosen.length * 110}px`;

  // group headers, placed in the part loaded from the top
  const nested: NestedRow[] | null = useMemo(
    () => (group || flat || !pages ? null : nestedRows(pages, expanded)), [pages, tick, group, flat, expanded]);
  const items: Item[] | null = useMemo(() => {
    if (nested) return nested;
    if (!group || !pages) return null;
    const out: Item[] = [];
    const prefix = pages.prefix;
    let cur: Item & { kind: "group" } | null = null;
    for (let i = 0; i < prefix; i++) {
      const r = pages.row(i)!;
      const v = fmtValue(valueOf(r, group));
      if (!cur || cur.value !== v) {
        cur = { kind: "group", value: v, count: 0, more: false, runs: [] };
        out.push(cur);
      }
      cur.count++;
      cur.runs.push(r);
      if (!collapsed.has(v)) out.push({ kind: "run", index: i });
    }
    if (cur && prefix < pages.count) cur.more = true;
    for (let i = prefix; i < pages.count; i++) out.push({ kind: "run", index: i });
    return out;
  }, [pages, tick, group, collapsed, nested]);

  const count = items ? items.length : pages?.count ?? 0;
  const onRange = (start: number, end: number) => {
    const toRun = (k: number) => {
      if (!items) return k;
      const it = items[Math.min(k, items.length - 1)];
      return it && it.kind === "run" ? it.index : pages?.prefix ?? 0;
    };
    const a = toRun(start);
    const b = Math.max(a + 1, toRun(Math.max(start, end - 1)) + 1);
    range.current = [a, b];
    pages?.ensure(a, b + 20);
  };

  const renderRow = (i: number, top: number, height: number) => {
    const it: Item = items ? items[i] : { kind: "run", index: i };
    const style = { top: `${top}px`, height: `${height}px`, gridTemplateColumns: template };
    if (!it) return null;
    if (it.kind === "group") {
      const open = !collapsed.has(it.value);
      return (
        <div key={`g:${it.value}`} class="row group-row" style={style} role="row">
          <button type="button" class="group-toggle" aria-expanded={open} onClick={() => {
            const next = new Set(collapsed);
            if (open) next.add(it.value);
            else next.delete(it.value);
            setCollapsed(next);
          }}>
            <span aria-hidden="true">{open ? "▾" : "▸"}</span> <span class="muted">{splitField(group)[1]} =</span>{" "}
            <strong class="group-value">{it.value}</strong>{" "}
            <span class="muted">· {it.count}{it.more ? "+" : ""} run{it.count === 1 && !it.more ? "" : "s"}</span>
          </button>
          {cols.slice(FIXED_COLS).map((c) => {
            if (splitField(c.id)[0] !== "metrics") return <span key={c.id} />;
            const vals = it.runs.map((r) => num(valueOf(r, c.id))).filter((v): v is number => v !== null);
            return <span key={c.id} class="cell num muted" title="mean over the group's runs">{vals.length ? `x̄ ${fmtNum(vals.reduce((a, b) => a + b, 0) / vals.length)}` : ""}</span>;
          })}
        </div>
      );
    }
    const r = pages?.row(it.index);
    if (!r) {
      return (
        <div key={`p:${it.index}`} class="row placeholder" style={style} role="row">
          <span /><span class="skeleton" /><span class="skeleton" /><span class="skeleton" /><span class="skeleton" />
        </div>
      );
    }
    const depth = it.depth ?? 0;
    const kids = it.children ?? 0;
    const open = expanded.has(r.id);
    const toggle = kids ? (
      <button type="button" class="nest-toggle" aria-expanded={open} data-children={kids}
        aria-label={`${open ? "hide" : "show"} the ${kids} child run${kids === 1 ? "" : "s"} of ${r.name || shortId(r.id)}`}
        onClick={() => {
          const next = new Set(expanded);
          if (open) next.delete(r.id);
          else next.add(r.id);
          setExpanded(next);
        }}>
        <span aria-hidden="true">{open ? "▾" : "▸"}</span> {kids}
      </button>
    ) : null;
    return (
      <div key={r.id} class={`row ${selected.includes(r.id) ? "selected" : ""} ${depth ? "child-row" : ""}`} style={style} role="row"
        data-run={r.id} data-depth={depth} data-parent={depth ? r.parent_id ?? undefined : undefined}>
        {cols.map((c) => (
          <span key={c.id} class={`cell ${c.cls ?? ""}`} style={c.id === "name" && depth ? { paddingLeft: `${8 + depth * 22}px` } : undefined}>
            {c.id === "name" && depth ? <span class="nest-mark muted" aria-hidden="true">↳ </span> : null}
            {c.id === "name" ? toggle : null}{c.cell(r)}
          </span>
        ))}
      </div>
    );
  };

  const sortKey = sort.replace(/^[-+]/, "");
  const header = (
    <div class="row head" style={{ gridTemplateColumns: template, height: `${HEAD_H}px` }} role="row">
      {cols.map((c) => {
        if (c.id === "select") {
          return (
            <span key={c.id} class="cell c-select">
              <input type="checkbox" aria-label="clear the selection" checked={selected.length > 0} disabled={!selected.length}
                onChange={() => setSelected([])} title="Clear the selection" />
            </span>
          );
        }
        const active = c.sort && sortKey === c.sort;
        const dir = active ? (sort.startsWith("-") ? "descending" : "ascending") : "none";
        return (
          <span key={c.id} class={`cell th ${c.cls ?? ""}`} role="columnheader" aria-sort={dir} title={c.title}>
            {c.sort ? (
              <button type="button" class="sort" onClick={() => setSort(c.sort!)} data-sort={c.sort}>
                {c.kind ? <span class="col-kind">{c.kind}</span> : null}{c.label}{active ? (sort.startsWith("-") ? " ▼" : " ▲") : ""}
              </button>
            ) : c.label}
          </span>
        );
      })}
    </div>
  );

  const err = pages?.error;
  const filterError = err instanceof ApiError && err.status === 400 ? err : null;
  const loadedRuns = pages ? pages.loaded() : [];
  const keys = useMemo(() => availableKeys(loadedRuns), [tick, pages]);
  const groupChoices = [...keys.params.map((k) => field("params", k)), ...keys.tags.map((k) => field("tags", k))];
  const countText = pages
    ? pages.exact !== null ? `${pages.exact.toLocaleString()} run${pages.exact === 1 ? "" : "s"}` : `${pages.loadedEnd.toLocaleString()}+ runs`
    : "";

  const applyFilter = (text: string) => setQuery({ filter: text.trim() || null });
  useEffect(() => {
    if (draft === filter) return;
    const t = setTimeout(() => applyFilter(draft), 700);
    return () => clearTimeout(t);
  }, [draft]);

  return (
    <div class="page runs-page">
      <div class="page-head">
        <h1>{project}</h1>
        <span class="muted" id="run-count">{countText}</span>
      </div>
      <form class="filter-bar" onSubmit={(e) => { e.preventDefault(); applyFilter(draft); }}>
        <input type="search" id="filter" name="filter" class={`filter-input ${filterError ? "invalid" : ""}`} spellcheck={false}
          placeholder="Filter: status = 'failed' and params.lr > 0.01   (docs/filters.md)" value={draft}
          aria-invalid={!!filterError} aria-describedby="filter-error"
          onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
        <label class="inline-label">Group by
          <select id="group-by" value={group} onChange={(e) => {
            setCollapsed(new Set());
            setQuery({ group: (e.target as HTMLSelectElement).value || null });
          }}>
            <option value="">(none)</option>
            {group && !groupChoices.includes(group) ? <option value={group}>{group}</option> : null}
            {groupChoices.map((g) => <option key={g} value={g}>{g}</option>)}
          </select>
        </label>
        <ColumnPicker keys={keys} chosen={chosen} onChange={(c) => setQuery({ cols: c.join(",") || "," })} />
        {flat || nested ? (
          <Toggle name="flat" checked={flat} onChange={(v) => setQuery({ flat: v ? "1" : null })}
            title="List every run on its own row instead of child runs (pipeline steps, sweep trials) under their parent">Flat</Toggle>
        ) : null}
        <Toggle name="serving" checked={withServing} onChange={(v) => setQuery({ serving: v ? "1" : null })}
          title="Show the runs of serving replicas too (each model server process is a run of kind serving)">Serving replicas</Toggle>
        <button type="button" class="btn btn-primary" id="compare-button" disabled={selected.length < 1}
          title={selected.length < 1 ? "Select 2 to 10 runs to compare them, or one to compare it with its baseline"
            : selected.length === 1 ? "Compare the selected run with its baseline (the run flightlog diagnose compares it with)"
            : "Compare the selected runs"}
          onClick={() => navigate(paths.compare(project, selected))}>
          Compare{selected.length ? ` (${selected.length})` : ""}
        </button>
        <Link to={paths.explore(project, filter.trim() ? { filter } : undefined)} class="btn" id="explore-link"
          title="Params against a metric for the runs of this filter">Explore</Link>
      </form>
      {firing.size ? (
        <p class="alert-banner" role="status">
          🔔 {firing.size} run{firing.size === 1 ? " has" : "s have"} firing alerts ·{" "}
          <button type="button" class="linkish" onClick={() => setQuery({ filter: `id in (${[...firing.keys()].map((id) => `'${id}'`).join(", ")})` })}>
            show them
          </button>
        </p>
      ) : null}
      {filterError ? (
        <pre class="filter-error" id="filter-error" role="alert">{filterError.message}</pre>
      ) : err ? (
        <pre class="filter-error" role="alert">{err.message}</pre>
      ) : null}
      {pages && pages.exact === 0 ? (
        <div class="empty">{filter ? "No run matches this filter." : "This project has no runs."}</div>
      ) : (
        <VirtualList class="runs-table" label="runs" count={count} rowHeight={ROW_H} header={header} headerHeight={HEAD_H}
          renderRow={renderRow} onRange={onRange} innerWidth={minWidth} />
      )}
    </div>
  );
}
