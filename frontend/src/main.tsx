import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { get, onUnauthorized, send } from "./api";
import { Compare } from "./pages/Compare";
import { DeploymentPage, Deployments } from "./pages/Deployments";
import { ModelPage, Models } from "./pages/Models";
import { Explore } from "./pages/Explore";
import { Failures } from "./pages/Failures";
import { Projects } from "./pages/Projects";
import { RunPage } from "./pages/Run";
import { Runs } from "./pages/Runs";
import { SignIn } from "./pages/SignIn";
import { href, Link, mlflowHashTarget, navigate, paths, useLocation } from "./router";
import "./styles.css";
import { applyTheme, setTheme, themeChoice, type ThemeChoice } from "./theme";
import type { Principal } from "./types";

applyTheme();
followMlflowLink();

/** An MLflow client's link (`http://server/#/experiments/1/runs/ID`) opens what it names. */
function followMlflowLink(): void {
  const target = mlflowHashTarget(location.hash);
  if (!target) return;
  if ("path" in target) {
    history.replaceState(null, "", href(target.path));
    return;
  }
  history.replaceState(null, "", href(""));
  fetch(href(`api/2.0/mlflow/experiments/get?experiment_id=${encodeURIComponent(target.experiment)}`), { credentials: "same-origin" })
    .then((r) => (r.ok ? r.json() : null))
    .then((doc: { experiment?: { name?: string } } | null) => {
      const name = doc?.experiment?.name;
      if (name) navigate(paths.runs(name === "Default" ? "default" : name), { replace: true });
    })
    .catch(() => undefined); // no MLflow API here: the projects list it is
}

const NEXT_THEME: Record<ThemeChoice, ThemeChoice> = { auto: "light", light: "dark", dark: "auto" };

function ThemeButton() {
  const [choice, setChoice] = useState(themeChoice());
  const label = { auto: "Theme: system", light: "Theme: light", dark: "Theme: dark" }[choice];
  return (
    <button type="button" class="btn btn-ghost" id="theme-toggle" title={`${label} (click to change)`} aria-label={label}
      onClick={() => {
        const next = NEXT_THEME[choice];
        setTheme(next);
        setChoice(next);
      }}>
      {choice === "auto" ? "◐" : choice === "light" ? "☀" : "☾"}
    </button>
  );
}

function App() {
  const loc = useLocation();
  const [needSignIn, setNeedSignIn] = useState(false);
  const [session, setSession] = useState(0);
  const [me, setMe] = useState<Principal | null>(null);

  useEffect(() => onUnauthorized(() => setNeedSignIn(true)), []);
  useEffect(() => {
    get<Principal>("whoami").then(setMe, () => setMe(null));
  }, [session]);

  const signedIn = () => {
    setNeedSignIn(false);
    setSession((s) => s + 1);
    if (loc.route.page === "signin") navigate(loc.query.get("next") || paths.projects(), { replace: true });
  };
  const signOut = async () => {
    await send("DELETE", "session").catch(() => undefined);
    setMe(null);
    setNeedSignIn(true);
  };

  const route = loc.route;
  let page;
  if (needSignIn || route.page === "signin") page = <SignIn onSignedIn={signedIn} />;
  else if (route.page === "projects") page = <Projects />;
  else if (route.page === "runs") page = <Runs project={route.project} query={loc.query} />;
  else if (route.page === "run") page = <RunPage route={route} query={loc.query} />;
  else if (route.page === "compare") page = <Compare project={route.project} query={loc.query} />;
  else if (route.page === "explore") page = <Explore project={route.project} query={loc.query} />;
  else if (route.page === "models") page = <Models />;
  else if (route.page === "model") page = <ModelPage name={route.name} query={loc.query} />;
  else if (route.page === "deployments") page = <Deployments />;
  else if (route.page === "deployment") page = <DeploymentPage endpoint={route.endpoint} query={loc.query} />;
  else if (route.page === "failures") page = <Failures project={route.project} query={loc.query} />;
  else page = <NotFound path={route.path} />;

  return (
    <div class="app" key={session}>
      <header class="topbar">
        <Link to={paths.projects()} class="brand" aria-label="flightlog: projects">
          <span class="brand-mark" aria-hidden="true">◆</span> flightlog
        </Link>
        <nav class="topnav" aria-label="sections">
          <Link to={paths.projects()} class={`topnav-link ${route.page === "projects" || ("project" in route && route.page !== "failures") ? "on" : ""}`}>Projects</Link>
          <Link to={paths.models()} class={`topnav-link ${route.page === "models" || route.page === "model" ? "on" : ""}`}>Models</Link>
          <Link to={paths.deployments()} class={`topnav-link ${route.page === "deployments" || route.page === "deployment" ? "on" : ""}`}>Deployments</Link>
          <Link to={paths.failures("project" in route ? route.project : null)} class={`topnav-link ${route.page === "failures" ? "on" : ""}`} id="nav-failures">Failures</Link>
        </nav>
        <nav class="crumbs" aria-label="breadcrumbs">
          {"project" in route && route.project ? (
            <>
              <span class="sep">/</span>
              <Link to={paths.runs(route.project)} class="crumb">{route.project}</Link>
            </>
          ) : null}
          {route.page === "run" ? (<><span class="sep">/</span><span class="crumb mono">{route.run.slice(0, 8)}</span></>) : null}
          {route.page === "compare" ? (<><span class="sep">/</span><span class="crumb">compare</span></>) : null}
          {route.page === "explore" ? (<><span class="sep">/</span><span class="crumb">explore</span></>) : null}
          {route.page === "model" ? (<><span class="sep">/</span><Link to={paths.models()} class="crumb">models</Link><span class="sep">/</span><span class="crumb">{route.name}</span></>) : null}
          {route.page === "deployment" ? (<><span class="sep">/</span><Link to={paths.deployments()} class="crumb">deployments</Link><span class="sep">/</span><span class="crumb">{route.endpoint}</span></>) : null}
          {route.page === "failures" ? (<><span class="sep">/</span><span class="crumb">failures</span></>) : null}
        </nav>
        <div class="topbar-right">
          {me && me.auth ? (
            <span class="who" title={me.project ? `limited to project ${me.project}` : "every project"}>
              {me.role}{me.project ? ` · ${me.project}` : ""}
              {me.via === "cookie" ? <button type="button" class="btn btn-ghost" onClick={signOut}>Sign out</button> : null}
            </span>
          ) : null}
          <ThemeButton />
        </div>
      </header>
      <main class="main">{page}</main>
    </div>
  );
}

function NotFound({ path }: { path: string }) {
  return (
    <div class="page narrow">
      <h1>Not found</h1>
      <p>There is no page at <code>/{path}</code>.</p>
      <p><Link to={paths.projects()}>All projects</Link></p>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
