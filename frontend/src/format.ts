// Formatting for people: times, durations, sizes, numbers and param values.
import type { Json } from "./types";

export function ms(iso: string | null | undefined): number | null {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** Local date and time, `2026-11-30 13:05:10`; with `millis`, `.123` too. */
export function fmtTime(t: number | string | null | undefined, opts: { millis?: boolean; date?: boolean } = {}): string {
  const v = typeof t === "string" ? ms(t) : t;
  if (v === null || v === undefined) return "—";
  const d = new Date(v);
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}` +
    (opts.millis ? `.${pad(d.getMilliseconds(), 3)}` : "");
  if (opts.date === false) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

export function fmtAgo(t: string | null | undefined, now = Date.now()): string {
  const v = ms(t);
  if (v === null) return "—";
  const s = Math.max(0, (now - v) / 1000);
  if (s < 60) return `${Math.round(s)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** Seconds to `450 ms`, `3.2 s`, `4m 05s`, `2h 03m`, `3d 4h`. */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return "—";
  const neg = s < 0 ? "-" : "";
  s = Math.abs(s);
  if (s < 1e-3) return `${neg}${Math.round(s * 1e6)} µs`;
  if (s < 1) return `${neg}${Math.round(s * 1000)} ms`;
  if (s < 60) return `${neg}${s < 10 ? s.toFixed(2) : s.toFixed(1)} s`;
  if (s < 3600) return `${neg}${Math.floor(s / 60)}m ${pad(Math.floor(s % 60))}s`;
  if (s < 86400) return `${neg}${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${neg}${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  let v = Math.abs(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? "-" : ""}${i === 0 ? v : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ${units[i]}`;
}

/** A number with about 4 significant digits; NaN/inf strings kept as they came. */
export function fmtNum(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return compactExponent(v, 3);
  return String(Number(v.toPrecision(5)));
}

/** `1e-4`, `3.333e-6`, `6e9`: an exponent without `+` and a mantissa without trailing zeros. */
function compactExponent(v: number, digits: number): string {
  const [mantissa, exponent] = v.toExponential(digits).split("e");
  return `${Number(mantissa)}e${Number(exponent)}`;
}

/** An axis tick: short and alike on every chart, `6e9` rather than `6000000000`, `1e-4` rather
 *  than `1.000e-4`, `0.25` and `1500` as they are. Up to 5 significant digits, so close ticks
 *  (1.0001e6, 1.0002e6) stay apart. */
export function fmtTick(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return compactExponent(v, 4);
  return String(Number(v.toPrecision(5)));
}

/** A param's value as written in JSON (strings without quotes). */
export function fmtValue(v: Json | undefined): string {
  if (v === undefined) return "—";
  if (v === null) return "null";
  if (typeof v === "string") return v;
  if (typeof v === "number") return fmtNum(v);
  return JSON.stringify(v);
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}

const SIGNALS: Record<number, string> = {
  1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
};
export function signalName(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return SIGNALS[n] ?? `signal ${n}`;
}

/** A command line as a shell would read it. */
export function shellJoin(args: string[]): string {
  return args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}

/** Parse the user's "jump to" text: ISO time, HH:MM[:SS] on the run's day (local), or +90s / +5m from the start. */
export function parseJump(text: string, start: number | null): number | null {
  const s = text.trim();
  if (!s) return null;
  const rel = /^\+\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i.exec(s);
  if (rel) {
    const unit = { ms: 0.001, s: 1, m: 60, h: 3600 }[(rel[2] || "s").toLowerCase() as "s"] ?? 1;
    return start === null ? null : start + Number(rel[1]) * unit * 1000;
  }
  const hm = /^(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/.exec(s);
  if (hm) {
    const d = new Date(start ?? Date.now());
    d.setHours(Number(hm[1]), Number(hm[2]), Number(hm[3] ?? 0), Number((hm[4] ?? "0").padEnd(3, "0")));
    return d.getTime();
  }
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t;
}

/** Milliseconds for people: `0.42 ms`, `1.23 ms`, `12.3 ms`, `245 ms`, `1.35 s`. */
export function fmtMs(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  if (v === 0) return "0 ms";
  if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
  if (v >= 100) return `${Math.round(v)} ms`;
  if (v >= 10) return `${v.toFixed(1)} ms`;
  return `${v.toFixed(2)} ms`;
}

export function fmtRate(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  if (v === 0) return "0%";
  const p = v * 100;
  return `${p < 0.1 ? p.toFixed(2) : p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}
