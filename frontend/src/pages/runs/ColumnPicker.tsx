import { useEffect, useRef, useState } from "preact/hooks";
import { field } from "./model";

export function ColumnPicker(props: {
  keys: { params: string[]; tags: string[]; metrics: string[] };
  chosen: string[];
  onChange: (cols: string[]) => void;
}) {
  const [open, setOpen] = useState(false);
  const [search, setSearch] = useState("");
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) setOpen(false);
    };
    const escape = (e: KeyboardEvent) => e.key === "Escape" && setOpen(false);
    document.addEventListener("mousedown", close);
    document.addEventListener("keydown", escape);
    return () => {
      document.removeEventListener("mousedown", close);
      document.removeEventListener("keydown", escape);
    };
  }, [open]);
  const chosen = new Set(props.chosen);
  const toggle = (f: string) => {
    const next = chosen.has(f) ? props.chosen.filter((c) => c !== f) : [...props.chosen, f];
    props.onChange(next);
  };
  const s = search.toLowerCase();
  const group = (title: string, prefix: "params" | "tags" | "metrics", keys: string[]) => {
    const shown = keys.filter((k) => k.toLowerCase().includes(s));
    if (!shown.length) return null;
    return (
      <fieldset class="picker-group">
        <legend>{title}</legend>
        {shown.slice(0, 300).map((k) => {
          const f = field(prefix, k);
          return (
            <label key={f} class="picker-item">
              <input type="checkbox" checked={chosen.has(f)} onChange={() => toggle(f)} data-field={f} />
              <span>{k}</span>
            </label>
          );
        })}
      </fieldset>
    );
  };
  return (
    <div class="picker" ref={box}>
      <button type="button" class="btn" id="column-picker" aria-expanded={open} onClick={() => setOpen(!open)}>
        Columns ▾
      </button>
      {open ? (
        <div class="picker-pop" role="dialog" aria-label="Choose columns">
          <input type="search" placeholder="Find a param, tag or metric" value={search} autoFocus
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
          <div class="picker-list">
            {group("Metrics (latest value)", "metrics", props.keys.metrics)}
            {group("Params", "params", props.keys.params)}
            {group("Tags", "tags", props.keys.tags)}
          </div>
          <div class="picker-foot">
            <button type="button" class="btn btn-small" onClick={() => props.onChange([])}>None</button>
            <button type="button" class="btn btn-small" onClick={() => setOpen(false)}>Done</button>
          </div>
        </div>
      ) : null}
    </div>
  );
}
