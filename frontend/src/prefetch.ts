// The first API requests of the page being opened, started by a script of its own that the page
// lists before the app: it runs while the app's code is still being fetched and compiled, so the
// server's answer and the browser's work overlap instead of following each other. The app takes
// a request from here when it asks for exactly the same URL (api.ts `request`), else fetches as
// usual; an answer nobody takes is dropped after a while. Only requests the opened page is
// certain to make: the runs table's first page (its default order, no filter or grouping), a run
// and its metric list, and then the charts of its first metrics.
//
// It imports nothing (the build makes it a file of its own, loaded before the app's code): the
// URLs are spelled here as api.ts's `apiUrl` and `pathSegments` spell them, which they must match.

const PAGE = 100; // runs/model.ts PAGE
const CHART_BUCKETS = 1000; // MetricChart's buckets for one run
const FIRST_CHARTS = 4; // about what a first screen shows

const API = "api/v1/"; // api.ts API

function apiUrl(path: string, query: Record<string, string | number> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== "") params.set(k, String(v));
  const qs = params.toString();
  return API + path + (qs ? "?" + qs : "");
}

function pathSegments(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}

type Prefetched = Map<string, Promise<Response>>;
declare global {
  interface Window {
    __flightlogPrefetch?: Prefetched;
  }
}

export {}; // a module (for `declare global`), though it exports nothing

function start(url: string, prefetched: Prefetched): Promise<Response> {
  const p = fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
  prefetched.set(url, p);
  p.catch(() => prefetched.delete(url)); // the app asks again, and reports what went wrong
  setTimeout(() => prefetched.delete(url), 15_000);
  return p;
}

function prefetch(): void {
  const base = new URL(document.baseURI).pathname.replace(/\/?$/, "/");
  const path = location.pathname.startsWith(base) ? location.pathname.slice(base.length) : "";
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(location.search);
  const prefetched: Prefetched = new Map();
  window.__flightlogPrefetch = prefetched;
  if (parts[0] !== "projects" || parts.length < 2) return;
  const project = parts[1];
  if (parts.length === 2 && !query.get("filter") && !query.get("group")) {
    const sort = query.get("sort") ?? "-created";
    // the same URL the runs page asks for (pages/Runs.tsx): serving replicas left out unless shown
    const kind = query.get("serving") === "1" ? "all" : "training";
    start(apiUrl("runs", { project, order_by: sort, limit: PAGE, offset: 0, kind }), prefetched);
    return;
  }
  if (parts[2] !== "runs" || parts.length < 4) return;
  const run = encodeURIComponent(parts[3]);
  start(apiUrl(`runs/${run}`), prefetched);
  if (parts[4] !== "metrics" || query.get("m") || query.get("zoom")) return;
  start(apiUrl(`runs/${run}/metrics`), prefetched).then(async (res) => {
    if (!res.ok) return;
    const doc = (await res.clone().json()) as { metrics?: { name: string }[] };
    for (const m of (doc.metrics ?? []).slice(0, FIRST_CHARTS)) {
      start(apiUrl(`runs/${run}/metrics/${pathSegments(m.name)}`, { buckets: CHART_BUCKETS }), prefetched);
    }
  }, () => undefined);
}

prefetch();
