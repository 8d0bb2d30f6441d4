// Logs: a virtualized list of events with level, stream, component and attempt filters, text
// search (server-side) with highlights, tracebacks collapsed, jump to a time, live follow over
// SSE while the run runs, and download. Log text is only ever rendered as text.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get, stream, type Query } from "../../api";
import { VirtualList } from "../../components/VirtualList";
import { ErrorBox, FINISHED, Highlight, saveText, Spinner, Toggle } from "../../components/ui";
import { fmtTime, parseJump, shortId } from "../../format";
import { setQuery } from "../../router";
import { useAsync } from "../../hooks";
import type { LogEvent, LogPage, RankInfo, Run } from "../../types";

const PAGE = 1000;
const ROW_H = 22;
const LINE_H = 18;
const LEVELS = ["debug", "info", "warning", "error", "critical"];
const STREAMS = ["stdout", "stderr", "sdk"];

type Ev = LogEvent & { _k: number; _lines: string[] };
let seq = 0;
const wrap = (e: LogEvent): Ev => ({ ...e, _k: ++seq, _lines: e.message.split("\n") });

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function isTraceback(lines: string[]): boolean {
  return lines.length > 1 && (lines[0].startsWith("Traceback") || lines.some((l) => /^\s+File "/.test(l)));
}

function expandedHeight(e: Ev): number {
  const fieldLines = e.fields && Object.keys(e.fields).length ? Object.keys(e.fields).length + 1 : 0;
  return ROW_H + Math.min(400, e._lines.length + fieldLines) * LINE_H + 14;
}

export function Logs({ run, query }: { run: Run; query: URLSearchParams }) {
  const level = query.get("level") ?? "";
  const streams = (query.get("stream") ?? "").split(",").filter((s) => STREAMS.includes(s));
  const component = query.get("component") ?? "";
  const attempt = query.get("attempt") ?? "";
  const rank = query.get("rank") ?? "";
  const ranks = useAsync((signal) => get<{ ranks: RankInfo[] }>(`runs/${run.id}/ranks`, undefined, signal), [run.id]);
  const rankList = ranks.data?.ranks ?? [];
  const distributed = rankList.length > 0 || rank !== "";
  const q = query.get("q") ?? "";
  const regexMode = query.get("regex") === "1";
  const since = query.get("since") ?? "";
  const running = !FINISHED.has(run.status);

  let re: RegExp | null = null;
  let reError: string | null = null;
  if (q) {
    try {
      re = new RegExp(regexMode ? q : escapeRe(q), "i");
    } catch (err) {
      reError = (err as Error).message;
    }
  }
  const filters: Query = {
    level: level || undefined,
    stream: streams.length ? streams.join(",") : undefined,
    component: component || undefined,
    attempt: attempt || undefined,
    rank: rank || undefined,
    grep: re ? re.source : undefined,
  };
  const key = JSON.stringify([run.id, filters, since]);

  const [events, setEvents] = useState<Ev[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [hasBefore, setHasBefore] = useState(false);
  const [atEnd, setAtEnd] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<Error | null>(null);
  const [follow, setFollow] = useState(running && !since);
  const [expanded, setExpanded] = useState<Set<number>>(new Set());
  const [jump, setJump] = useState("");
  const [jumpError, setJumpError] = useState<string | null>(null);
  const [scrollTo, setScrollTo] = useState<{ index: number; seq: number } | null>(null);
  const [download, setDownload] = useState<string | null>(null);
  const [liveState, setLiveState] = useState<"off" | "on" | "ended">("off");
  const busy = useRef(false);
  const evRef = useRef(events);
  evRef.current = events;

  // first page whenever the filters change
  useEffect(() => {
    const ctrl = new AbortController();
    setEvents([]);
    setExpanded(new Set());
    setError(null);
    setLoading(true);
    setAtEnd(false);
    setCursor(null);
    busy.current = true;
    const tail = !since && running;
    setFollow(tail);
    get<LogPage>(`runs/${run.id}/logs`, { ...filters, limit: PAGE, tail: tail || undefined, since: since || undefined }, ctrl.signal)
      .then((page) => {
        busy.current = false;
        setEvents(page.events.map(wrap));
        setCursor(page.next_cursor);
        setAtEnd(page.next_cursor === null);
        setHasBefore(tail ? page.events.length >= PAGE : !!since);
        setLoading(false);
      }, (err: Error) => {
        busy.current = false;
        if (err.name === "AbortError") return;
        setError(err);
        setLoading(false);
      });
    return () => ctrl.abort();
  }, [key]);

  // live: once the list reaches the end of what is stored, new events arrive over SSE; the
  // stream stays open until the server ends it, after the run's last events
  const live = useRef(running);
  useEffect(() => {
    live.current = running;
  }, [key]);
  useEffect(() => {
    if (!live.current || !atEnd || loading || error) return;
    const last = evRef.current[evRef.current.length - 1];
    const lastTime = last?.time;
    let skip = lastTime ? evRef.current.filter((e) => e.time === lastTime).length : 0;
    setLiveState("on");
    const close = stream(run.id, { ...filters, events: "logs", since: lastTime ?? (since || undefined) }, {
      logs: (doc: { events: LogEvent[] }) => {
        const fresh: Ev[] = [];
        for (const e of doc.events) {
          if (lastTime && e.time < lastTime) continue;
          if (lastTime && e.time === lastTime && skip > 0) {
            skip--;
            continue;
          }
          fresh.push(wrap(e));
        }
        if (fresh.length) setEvents((cur) => cur.concat(fresh));
      },
      end: () => {
        live.current = false;
        setLiveState("ended");
      },
    });
    return () => {
      close();
      setLiveState("off");
    };
  }, [key, atEnd, loading, !!error]);

  const loadMore = () => {
    if (busy.current || !cursor) return;
    busy.current = true;
    get<LogPage>(`runs/${run.id}/logs`, { ...filters, limit: PAGE, since: since || undefined, cursor }).then((page) => {
      busy.current = false;
      setEvents((cur) => cur.concat(page.events.map(wrap)));
      setCursor(page.next_cursor);
      if (page.next_cursor === null) setAtEnd(true);
    }, (err: Error) => {
      busy.current = false;
      setError(err);
    });
  };

  const loadEarlier = () => {
    const first = evRef.current[0];
    if (busy.current || !hasBefore || !first) return;
    busy.current = true;
    // times are ISO with milliseconds: ask up to the end of the first event's millisecond, then
    // drop what the list already holds (the last `dup` events of that millisecond)
    const until = new Date(Date.parse(first.time) + 1).toISOString();
    get<LogPage>(`runs/${run.id}/logs`, { ...filters, limit: PAGE, tail: true, until }).then((page) => {
      busy.current = false;
      let dup = evRef.current.findIndex((e) => e.time !== first.time);
      if (dup < 0) dup = evRef.current.length;
      const got = page.events.filter((e) => e.time <= first.time);
      const older = got.slice(0, Math.max(0, got.length - dup)).map(wrap);
      setHasBefore(page.events.length >= PAGE);
      if (!older.length) return;
      setEvents((cur) => older.concat(cur));
      setScrollTo({ index: older.length, seq: Date.now() });
    }, (err: Error) => {
      busy.current = false;
      setError(err);
    });
  };

  const offsets = useMemo(() => {
    const o = new Float64Array(events.length + 1);
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      o[i + 1] = o[i] + (expanded.has(e._k) ? expandedHeight(e) : ROW_H);
    }
    return o;
  }, [events, expanded]);

  const toggle = (k: number) => {
    const next = new Set(expanded);
    if (next.has(k)) next.delete(k);
    else next.add(k);
    setExpanded(next);
  };

  const onRange = (_start: number, end: number) => {
    if (end >= events.length - 50 && cursor && !busy.current) loadMore();
  };

  const renderRow = (i: number, top: number, height: number) => {
    const e = events[i];
    if (!e) return null;
    const open = expanded.has(e._k);
    const multi = e._lines.length > 1;
    const tb = isTraceback(e._lines);
    const summary = tb ? e._lines.filter((l) => l.trim()).slice(-1)[0] ?? e._lines[0] : e._lines[0];
    const hasFields = !!e.fields && Object.keys(e.fields).length > 0;
    return (
      <div key={e._k} class={`log-row lvl-${e.level} ${open ? "open" : ""} ${tb ? "tb" : ""}`} style={{ top: `${top}px`, height: `${height}px` }}
        data-level={e.level} data-stream={e.stream}>
        <div class="log-line" onClick={() => (multi || hasFields || e.message.length > 200) && toggle(e._k)}>
          <span class="log-time mono" title={e.time}>{fmtTime(e.time, { millis: true, date: false })}</span>
          <span class={`log-level lvl-${e.level}`}>{e.level}</span>
          <span class="log-stream muted">{e.stream}</span>
          {e.component ? <span class="log-comp muted" title={e.component}>{e.component}</span> : <span class="log-comp" />}
          {run.attempt > 1 ? <span class="log-attempt muted" title={`attempt ${e.attempt}`}>#{e.attempt}</span> : null}
          {distributed ? <span class="log-rank muted" data-rank={e.rank ?? ""} title={e.rank !== null ? `rank ${e.rank}` : "the launcher or the run as a whole"}>{e.rank !== null ? `r${e.rank}` : ""}</span> : null}
          {multi || hasFields ? (
            <button type="button" class="log-expand" aria-expanded={open} aria-label={open ? "collapse" : "expand"}
              onClick={(ev) => { ev.stopPropagation(); toggle(e._k); }}>{open ? "▾" : "▸"}</button>
          ) : null}
          <span class="log-msg mono">
            <Highlight text={summary} re={re} />
            {multi && !open ? <span class="muted"> {tb ? `(traceback, ${e._lines.length} lines)` : `(+${e._lines.length - 1} lines)`}</span> : null}
          </span>
        </div>
        {open ? (
          <pre class="log-full mono">
            <Highlight text={e.message} re={re} />
            {hasFields ? "\n\n" + Object.entries(e.fields!).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join("\n") : ""}
          </pre>
        ) : null}
      </div>
    );
  };

  const doJump = (e: Event) => {
    e.preventDefault();
    const t = parseJump(jump, run.started ? Date.parse(run.started) : null);
    if (t === null) {
      setJumpError("use a time like 13:05:10, 2026-11-30T13:05:10Z, or +90s from the start");
      return;
    }
    setJumpError(null);
    setQuery({ since: new Date(t).toISOString() });
  };

  const doDownload = async () => {
    const lines: string[] = [];
    let next: string | null = null;
    setDownload("0");
    try {
      do {
        const page: LogPage = await get<LogPage>(`runs/${run.id}/logs`, { ...filters, since: since || undefined, limit: 10000, cursor: next ?? undefined });
        for (const e of page.events) lines.push(`${e.time} ${e.stream} ${e.level.toUpperCase()}${e.rank !== null ? ` [rank ${e.rank}]` : ""}${e.component ? ` ${e.component}` : ""}${e.attempt > 1 ? ` #${e.attempt}` : ""}: ${e.message}`);
        next = page.next_cursor;
        setDownload(String(lines.length));
      } while (next);
      saveText(`${run.name || "run"}-${shortId(run.id)}.log`, lines.join("\n") + "\n");
    } catch (err) {
      setError(err as Error);
    } finally {
      setDownload(null);
    }
  };

  const total = run.counters?.log_events;
  return (
    <div class="logs-tab">
      <div class="log-filters">
        <label class="inline-label">Level
          <select name="level" value={level} onChange={(e) => setQuery({ level: (e.target as HTMLSelectElement).value || null })}>
            <option value="">all</option>
            {LEVELS.map((l) => <option key={l} value={l}>{l} and above</option>)}
          </select>
        </label>
        <div class="segmented" role="group" aria-label="streams">
          {STREAMS.map((s) => {
            const on = streams.includes(s);
            return (
              <button type="button" key={s} class={on ? "on" : ""} aria-pressed={on} data-stream={s}
                onClick={() => setQuery({ stream: (on ? streams.filter((x) => x !== s) : [...streams, s]).join(",") || null })}>{s}</button>
            );
          })}
        </div>
        <ComponentFilter value={component} events={events} />
        <label class="inline-label">Attempt
          <select name="attempt" value={attempt} onChange={(e) => setQuery({ attempt: (e.target as HTMLSelectElement).value || null })}>
            <option value="">all</option>
            {Array.from({ length: Math.max(run.attempt, Number(attempt) || 0) }, (_, i) => i + 1).map((a) => <option key={a} value={String(a)}>{a}</option>)}
          </select>
        </label>
        {distributed ? (
          <label class="inline-label">Rank
            <select name="rank" value={rank} onChange={(e) => setQuery({ rank: (e.target as HTMLSelectElement).value || null })}>
              <option value="">all</option>
              {[...new Set([...rankList.map((r) => r.rank), ...(rank ? [Number(rank)] : [])])].sort((a, b) => a - b).map((r) => (
                <option key={r} value={String(r)}>{r}</option>
              ))}
            </select>
          </label>
        ) : null}
        <SearchBox value={q} regex={regexMode} />
        <form class="jump" onSubmit={doJump}>
          <input name="jump" placeholder="Jump to 13:05:10 or +5m" value={jump} onInput={(e) => setJump((e.target as HTMLInputElement).value)} />
          <button class="btn" type="submit">Go</button>
        </form>
        <button type="button" class="btn" id="download-logs" onClick={doDownload} disabled={download !== null}>
          {download !== null ? `Downloading… ${download}` : "Download"}
        </button>
        {running ? (
          <Toggle name="follow" checked={follow} onChange={(v) => {
            setFollow(v);
            if (v && !atEnd) setQuery({ since: null });
          }}>Follow</Toggle>
        ) : null}
      </div>
      {rank ? (
        <p class="muted small" id="rank-logs-note">
          Rank {rank}'s events: what its SDK recorded, and the lines its launcher marked with its rank (torch marks a rank's
          traceback <code>[rank{rank}]:</code>; <code>torchrun --tee 3</code> marks every line).
        </p>
      ) : null}
      {reError ? <p class="form-error" role="alert">Not a regular expression: {reError}</p> : null}
      {jumpError ? <p class="form-error" role="alert">{jumpError}</p> : null}
      {error ? <ErrorBox error={error} what="logs" /> : null}
      <div class="log-status muted small">
        {loading ? <><Spinner /> loading…</> : `${events.length.toLocaleString()} event${events.length === 1 ? "" : "s"} shown${total !== undefined ? ` of ${total.toLocaleString()} recorded` : ""}`}
        {since ? <> · from {fmtTime(since, { millis: true })} <button type="button" class="btn btn-small" onClick={() => setQuery({ since: null })}>From the start</button></> : null}
        {hasBefore ? <> · <button type="button" class="btn btn-small" id="load-earlier" onClick={loadEarlier}>Load earlier</button></> : null}
        {liveState === "on" ? <span class="live"> · ● live</span> : null}
      </div>
      {!loading && !events.length && !error ? (
        <div class="empty">{q || level || streams.length || component || attempt || rank ? "No event matches these filters." : running ? "No log events yet: waiting for the run to write some." : "This run has no log events."}</div>
      ) : (
        <VirtualList class="log-list" label="log events" count={events.length} rowHeight={ROW_H} offsets={offsets}
          renderRow={renderRow} onRange={onRange} follow={follow} onFollowChange={running ? setFollow : undefined}
          onScrollTop={hasBefore ? loadEarlier : undefined} scrollToIndex={scrollTo} />
      )}
    </div>
  );
}

function ComponentFilter({ value, events }: { value: string; events: Ev[] }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  const seen = useMemo(() => [...new Set(events.slice(0, 5000).map((e) => e.component).filter(Boolean) as string[])].sort(), [events.length > 0]);
  return (
    <form class="inline-label" onSubmit={(e) => { e.preventDefault(); setQuery({ component: draft.trim() || null }); }}>
      <input name="component" list="log-components" placeholder="component" value={draft} size={12}
        onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
        onChange={(e) => setQuery({ component: (e.target as HTMLInputElement).value.trim() || null })} />
      <datalist id="log-components">{seen.map((c) => <option key={c} value={c} />)}</datalist>
    </form>
  );
}

function SearchBox({ value, regex }: { value: string; regex: boolean }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  useEffect(() => {
    if (draft === value) return;
    const t = setTimeout(() => setQuery({ q: draft || null }), 500);
    return () => clearTimeout(t);
  }, [draft]);
  return (
    <form class="log-search" onSubmit={(e) => { e.preventDefault(); setQuery({ q: draft || null }); }}>
      <input type="search" name="q" placeholder="Search the logs" value={draft} onInput={(e) => setDraft((e.target as HTMLInputElement).value)} />
      <label class="toggle small" title="Treat the search as a regular expression">
        <input type="checkbox" name="regex" checked={regex} onChange={(e) => setQuery({ regex: (e.target as HTMLInputElement).checked ? "1" : null })} />.*
      </label>
    </form>
  );
}
