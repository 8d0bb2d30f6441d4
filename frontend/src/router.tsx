// A small history router. Every view has a URL (project, run, tab, filters in the query), so a
// link can be shared and the back button works. Paths are relative to the page's <base href>.
import type { ComponentChildren, JSX } from "preact";
import { useEffect, useState } from "preact/hooks";

export type Route =
  | { page: "projects" }
  | { page: "runs"; project: string }
  | { page: "run"; project: string | null; run: string; tab: string }
  | { page: "compare"; project: string | null }
  | { page: "explore"; project: string }
  | { page: "models" }
  | { page: "model"; name: string }
  | { page: "deployments" }
  | { page: "deployment"; endpoint: string }
  | { page: "failures"; project: string | null }
  | { page: "signin" }
  | { page: "notfound"; path: string };

export const TABS = ["overview", "metrics", "logs", "resources", "timeline", "artifacts", "pipeline"] as const;

function basePath(): string {
  const p = new URL(document.baseURI).pathname;
  return p.endsWith("/") ? p : p + "/";
}

/** The current path without the base, without a leading slash. */
export function currentPath(): string {
  const base = basePath();
  const path = location.pathname;
  return path.startsWith(base) ? path.slice(base.length) : path.replace(/^\//, "");
}

export function parse(path: string): Route {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: "projects" };
  if (parts[0] === "signin" && parts.length === 1) return { page: "signin" };
  if (parts[0] === "failures" && parts.length === 1) {
    return { page: "failures", project: new URLSearchParams(location.search).get("project") };
  }
  if (parts[0] === "compare" && parts.length === 1) return { page: "compare", project: null };
  if (parts[0] === "models" && parts.length === 1) return { page: "models" };
  if (parts[0] === "models" && parts.length === 2) return { page: "model", name: parts[1] };
  if (parts[0] === "deployments" && parts.length === 1) return { page: "deployments" };
  if (parts[0] === "deployments" && parts.length === 2) return { page: "deployment", endpoint: parts[1] };
  if (parts[0] === "runs" && parts.length >= 2 && parts.length <= 3) {
    return { page: "run", project: null, run: parts[1], tab: tabOf(parts[2]) };
  }
  if (parts[0] === "projects" && parts.length >= 2) {
    const project = parts[1];
    if (parts.length === 2) return { page: "runs", project };
    if (parts[2] === "compare" && parts.length === 3) return { page: "compare", project };
    if (parts[2] === "explore" && parts.length === 3) return { page: "explore", project };
    if (parts[2] === "runs" && parts.length >= 4 && parts.length <= 5) {
      return { page: "run", project, run: parts[3], tab: tabOf(parts[4]) };
    }
  }
  return { page: "notfound", path };
}

/**
 * The app path an MLflow UI link means: MLflow clients print `#/experiments/1/runs/ID` (and
 * `#/models/NAME/versions/2`) after the server's address; the run and the model have pages here.
 * An experiment alone is a project, found by asking the MLflow API for its name (`experimentPath`).
 */
export function mlflowHashTarget(hash: string): { path: string } | { experiment: string } | null {
  const m = /^#\/(experiments|models)\/([^/?]+)(?:\/(runs|versions)\/([^/?]+))?/.exec(hash);
  if (!m) return null;
  const [, kind, id, sub, subId] = m;
  const dec = (x: string) => { try { return decodeURIComponent(x); } catch { return x; } };
  if (kind === "experiments" && sub === "runs" && subId) return { path: `runs/${enc(dec(subId))}` };
  if (kind === "experiments") return { experiment: dec(id) };
  if (kind === "models") return { path: paths.model(dec(id)) };
  return null;
}

function tabOf(part: string | undefined): string {
  return part && (TABS as readonly string[]).includes(part) ? part : part ? "notfound" : "overview";
}

const enc = encodeURIComponent;
export const paths = {
  projects: () => "",
  runs: (project: string, query?: Record<string, string>) => `projects/${enc(project)}` + qs(query),
  run: (project: string, run: string, tab = "overview", query?: Record<string, string>) =>
    `projects/${enc(project)}/runs/${enc(run)}` + (tab === "overview" ? "" : `/${tab}`) + qs(query),
  compare: (project: string | null, runs: string[]) =>
    (project ? `projects/${enc(project)}/compare` : "compare") + qs({ runs: runs.join(",") }),
  explore: (project: string, query?: Record<string, string>) => `projects/${enc(project)}/explore` + qs(query),
  models: () => "models",
  model: (name: string, project?: string | null) => `models/${enc(name)}` + qs({ project }),
  deployments: () => "deployments",
  deployment: (endpoint: string, env?: string | null, project?: string | null) =>
    `deployments/${enc(endpoint)}` + qs({ env, project }),
  failures: (project?: string | null, query?: Record<string, string>) => "failures" + qs({ project: project ?? undefined, ...query }),
  signin: (next?: string) => "signin" + qs(next ? { next } : undefined),
};

export function qs(query?: Record<string, string | undefined | null>): string {
  if (!query) return "";
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") p.set(k, v);
  const s = p.toString();
  return s ? "?" + s : "";
}

/** An absolute URL path for a relative app path. */
export function href(to: string): string {
  return basePath() + to;
}

type Listener = () => void;
const listeners = new Set<Listener>();
const notify = () => listeners.forEach((fn) => fn());
window.addEventListener("popstate", notify);

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = href(to);
  if (url === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  notify();
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Change some query parameters of the current URL (replacing the history entry by default). */
export function setQuery(patch: Record<string, string | null | undefined>, opts: { push?: boolean } = {}): void {
  const params = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined || v === "") params.delete(k);
    else params.set(k, v);
  }
  const s = params.toString();
  navigate(currentPath() + (s ? "?" + s : ""), { replace: !opts.push });
}

export interface Location {
  path: string;
  query: URLSearchParams;
  route: Route;
}

function read(): Location {
  const path = currentPath();
  return { path, query: new URLSearchParams(location.search), route: parse(path) };
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(read);
  useEffect(() => {
    const fn = () => setLoc(read());
    listeners.add(fn);
    // Effects run after the first paint, so a navigate() made before this line reached no
    // listener: an answer that came first (an MLflow experiment link's lookup in main.tsx), or a
    // child's own effect. The URL says where the app is; catch up with it.
    const now = read();
    if (now.path !== loc.path || now.query.toString() !== loc.query.toString()) setLoc(now);
    return () => {
      listeners.delete(fn);
    };
  }, []);
  return loc;
}

export interface LinkProps {
  to: string;
  class?: string;
  title?: string;
  role?: "tab" | "link" | "button";
  id?: string;
  children: ComponentChildren;
  [data: `data-${string}`]: string | undefined;
  [aria: `aria-${string}`]: string | boolean | undefined;
}

export function Link(props: LinkProps): JSX.Element {
  const { to, children, ...rest } = props;
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return <a {...rest} href={href(to)} onClick={onClick}>{children}</a>;
}
