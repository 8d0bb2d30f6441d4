// Small shared pieces. Every value that came from a workload is rendered as text (Preact
// escapes it); nothing here ever builds HTML from strings.
import type { ComponentChildren, JSX } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "../api";

export const FINISHED = new Set(["succeeded", "failed", "stopped", "killed", "crashed"]);

export function StatusBadge({ status, reason }: { status: string; reason?: string | null }) {
  const title = reason ? `${status} (${reason})` : status;
  return (
    <span class={`status status-${status}`} title={title} data-status={status}>
      <span class="dot" aria-hidden="true" />
      {status}
    </span>
  );
}

export function Spinner({ label = "loading" }: { label?: string }) {
  return <span class="spinner" role="status" aria-label={label} />;
}

export function Loading({ what = "" }: { what?: string }) {
  return (
    <div class="loading">
      <Spinner /> {what ? `Loading ${what}…` : "Loading…"}
    </div>
  );
}

export function ErrorBox({ error, what }: { error: Error | ApiError; what?: string }) {
  const api = error instanceof ApiError ? error : null;
  return (
    <div class="error-box" role="alert">
      <strong>{what ? `Could not load ${what}` : "Something went wrong"}</strong>
      <pre class="error-message">{error.message}</pre>
      {api && api.code ? <span class="muted small">{api.code}</span> : null}
    </div>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

export function Card(props: { title?: ComponentChildren; actions?: ComponentChildren; class?: string; children: ComponentChildren; id?: string }) {
  return (
    <section class={`card ${props.class ?? ""}`} id={props.id}>
      {props.title || props.actions ? (
        <header class="card-head">
          <h2>{props.title}</h2>
          <div class="card-actions">{props.actions}</div>
        </header>
      ) : null}
      <div class="card-body">{props.children}</div>
    </section>
  );
}

export function KV({ rows }: { rows: [ComponentChildren, ComponentChildren][] }) {
  return (
    <dl class="kv">
      {rows.map(([k, v], i) => (
        <div class="kv-row" key={i}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** Text with the matches of `re` wrapped in <mark>: split into text nodes, never HTML. */
export function Highlight({ text, re }: { text: string; re: RegExp | null }): JSX.Element {
  if (!re || !text) return <>{text}</>;
  const parts: (string | JSX.Element)[] = [];
  const g = new RegExp(re.source, re.flags.includes("g") ? re.flags : re.flags + "g");
  let last = 0;
  let m: RegExpExecArray | null;
  let n = 0;
  while ((m = g.exec(text)) !== null && n < 500) {
    if (m[0].length === 0) {
      g.lastIndex++;
      continue;
    }
    if (m.index > last) parts.push(text.slice(last, m.index));
    parts.push(<mark key={n++}>{m[0]}</mark>);
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return <>{parts}</>;
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button type="button" class="btn btn-small" onClick={() => {
      navigator.clipboard?.writeText(text).then(() => {
        setDone(true);
        setTimeout(() => setDone(false), 1200);
      }, () => undefined);
    }}>{done ? "Copied" : label}</button>
  );
}

export function Toggle(props: { checked: boolean; onChange: (v: boolean) => void; children: ComponentChildren; title?: string; name?: string }) {
  return (
    <label class="toggle" title={props.title}>
      <input type="checkbox" name={props.name} checked={props.checked} onChange={(e) => props.onChange((e.target as HTMLInputElement).checked)} />
      {props.children}
    </label>
  );
}

export function Segmented<T extends string>(props: { value: T; options: [T, string][]; onChange: (v: T) => void; label: string }) {
  return (
    <div class="segmented" role="group" aria-label={props.label}>
      {props.options.map(([v, text]) => (
        <button type="button" key={v} class={v === props.value ? "on" : ""} aria-pressed={v === props.value}
          onClick={() => props.onChange(v)}>{text}</button>
      ))}
    </div>
  );
}

/** Download text the browser builds (logs, tables) as a file. */
export function saveText(name: string, text: string, type = "text/plain"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
