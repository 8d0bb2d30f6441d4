// The one way the UI talks to the server: the public HTTP API under api/v1 (relative to the
// page's <base href>, so the UI works behind a proxy's sub-path), and its live streams (SSE).
// The session is the HttpOnly cookie set by POST api/v1/session; the UI never sees a token.

export const API = "api/v1/";

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public details: Record<string, unknown> | null = null,
  ) {
    super(message);
  }
  /** True when the server has no such route (an optional feature not installed there). */
  get noRoute(): boolean {
    return this.status === 404 && /no API route/.test(this.message);
  }
}

export type Query = Record<string, string | number | boolean | null | undefined | string[]>;

export function apiUrl(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === null || v === undefined || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => params.append(k, x));
    else params.set(k, String(v));
  }
  const qs = params.toString();
  return API + path.replace(/^\//, "") + (qs ? "?" + qs : "");
}

/** A run's artifact path or a metric name as URL path segments ('/' kept between parts). */
export function pathSegments(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

type Listener = () => void;
const unauthorized = new Set<Listener>();
export function onUnauthorized(fn: Listener): () => void {
  unauthorized.add(fn);
  return () => unauthorized.delete(fn);
}

async function toError(res: Response): Promise<ApiError> {
  let code = `http_${res.status}`;
  let message = `${res.status} ${res.statusText}`;
  let details: Record<string, unknown> | null = null;
  try {
    const doc = await res.json();
    if (doc && doc.error) {
      code = String(doc.error.code ?? code);
      message = String(doc.error.message ?? message);
      details = doc.error.details ?? null;
    }
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiError(res.status, code, message, details);
}

export async function request(method: string, path: string, init: {
  query?: Query; body?: unknown; signal?: AbortSignal; headers?: Record<string, string>;
} = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json", ...(init.headers ?? {}) };
  let body: string | undefined;
  if (init.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(init.body);
  }
  let res: Response;
  const url = apiUrl(path, init.query);
  if (path === "session" && method !== "GET") dropPrefetched();
  try {
    // a prefetched answer only when it succeeded: a refusal (401 before signing in) is asked again
    const early = method === "GET" && init.headers === undefined ? await takePrefetched(url) : undefined;
    res = early?.ok ? early : await fetch(url, {
      method, headers, body, signal: init.signal, credentials: "same-origin", cache: "no-store",
    });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(0, "unreachable", "the flightlog server did not answer: is it still running?");
  }
  if (!res.ok) {
    const err = await toError(res);
    if (res.status === 401 && path !== "session") unauthorized.forEach((fn) => fn());
    throw err;
  }
  return res;
}

/** The answer prefetch.ts already asked for (the page's first requests), taken once. */
function takePrefetched(url: string): Promise<Response | undefined> | undefined {
  const prefetched = window.__flightlogPrefetch;
  const early = prefetched?.get(url);
  if (early) prefetched!.delete(url);
  return early?.catch(() => undefined); // it failed: the app asks itself, and reports what went wrong
}

/** Drop what prefetch.ts asked for: after signing in or out, its answers are another caller's. */
function dropPrefetched(): void {
  window.__flightlogPrefetch?.clear();
}

export async function get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
  const res = await request("GET", path, { query, signal });
  return (await res.json()) as T;
}

export async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, { body: body ?? {} });
  return (await res.json()) as T;
}

/** A number from the API ("NaN"/"Infinity" strings and null become null). */
export function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

export interface StreamHandlers {
  [event: string]: (data: any) => void;
}

/**
 * A live stream (SSE) of a run: `logs`, `metrics`, `status`, `end`, `reconnect`.
 * The browser reconnects by itself with Last-Event-ID; `end` closes it for good.
 */
export function stream(runId: string, query: Query, handlers: StreamHandlers): () => void {
  const source = new EventSource(apiUrl(`runs/${encodeURIComponent(runId)}/stream`, query));
  const listen = (name: string) =>
    source.addEventListener(name, (ev) => {
      let data: unknown = null;
      try {
        data = JSON.parse((ev as MessageEvent).data);
      } catch {
        return;
      }
      handlers[name]?.(data);
      if (name === "end") source.close();
    });
  ["logs", "metrics", "status", "end", "reconnect"].forEach(listen);
  source.onerror = () => handlers.error?.(source.readyState);
  return () => source.close();
}
