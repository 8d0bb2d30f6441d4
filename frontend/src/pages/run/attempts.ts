// A run's attempts (retries by `flightlog run --retries`, or `flightlog run --resume`) as time
// windows, so the timeline and the overview can say which attempt an instant or a span belongs
// to instead of mixing them: a resumed run's first step happened in attempt 1, before attempt 2
// even started.
import { FINISHED } from "../../components/ui";
import { fmtTime } from "../../format";
import type { Json, Run, Span, Stage } from "../../types";

export interface Attempt {
  n: number;
  start: number; // epoch seconds
  end: number;
  exit: Json | undefined; // the runner's exit code for it, when the runner recorded one
  running: boolean;
}

export const sec = (iso: string | null | undefined): number | null => (iso ? Date.parse(iso) / 1000 : null);

/** A span's start and end, in epoch seconds. */
export const spanTimes = (sp: { start: string; end: string }): [number, number] => [Date.parse(sp.start) / 1000, Date.parse(sp.end) / 1000];

/** An instant in epoch seconds as a clock time to the millisecond. */
export const clock = (ts: number): string => fmtTime(ts * 1000, { millis: true, date: false });

/** " · exit N" when the runner recorded the attempt's exit code, else "". */
export const exitNote = (a: Attempt): string => (a.exit !== undefined && a.exit !== null ? ` · exit ${a.exit}` : "");

export const isAttemptStage = (name: string): boolean => /^attempt \d+$/.test(name);

/** The attempts, ordered: from the runner's `attempt N` spans, else from the attempt every span
 *  carries; the attempt still running (no span of its own yet) ends now. */
export function attemptsOf(run: Run, stages: Stage[]): Attempt[] {
  const found = new Map<number, Attempt>();
  for (const s of stages) {
    if (!isAttemptStage(s.name)) continue;
    const n = Number(s.name.slice("attempt ".length));
    for (const sp of s.spans) {
      const [start, end] = spanTimes(sp);
      found.set(n, { n, start, end, exit: sp.attrs?.exit, running: false });
    }
  }
  const exact = new Set(found.keys()); // the runner's own windows; other spans do not widen them
  for (const s of stages) {
    if (isAttemptStage(s.name)) continue;
    for (const sp of s.spans) {
      const n = spanAttempt(sp);
      if (exact.has(n)) continue;
      const [start, end] = spanTimes(sp);
      const a = found.get(n);
      if (!a) found.set(n, { n, start, end, exit: undefined, running: false });
      else {
        a.start = Math.min(a.start, start);
        a.end = Math.max(a.end, end);
      }
    }
  }
  if (!FINISHED.has(run.status) && run.attempt > 0 && !exact.has(run.attempt)) {
    const earlier = [...found.values()].filter((a) => a.n < run.attempt).map((a) => a.end);
    const start = found.get(run.attempt)?.start ?? Math.max(sec(run.started) ?? 0, ...earlier);
    found.set(run.attempt, { n: run.attempt, start, end: Date.now() / 1000, exit: undefined, running: true });
  }
  return [...found.values()].sort((a, b) => a.n - b.n);
}

/** The attempt whose window holds the instant `ts` (seconds), if any. */
export function attemptAt(attempts: Attempt[], ts: number | null): Attempt | null {
  if (ts === null) return null;
  return attempts.find((a) => ts >= a.start - 0.001 && ts <= a.end + 0.001) ?? null;
}

/** The attempt a span belongs to: the one it was recorded in. */
export function spanAttempt(sp: Span): number {
  return sp.attempt ?? 1;
}
