import { get } from "../api";
import { Empty, ErrorBox, Loading } from "../components/ui";
import { fmtAgo, fmtTime } from "../format";
import { useAsync } from "../hooks";
import { Link, paths } from "../router";
import type { Project } from "../types";

export function Projects() {
  const projects = useAsync((signal) => get<{ projects: Project[] }>("projects", undefined, signal), []);
  return (
    <div class="page">
      <h1>Projects</h1>
      {projects.error ? <ErrorBox error={projects.error} what="projects" /> : null}
      {!projects.data && !projects.error ? <Loading what="projects" /> : null}
      {projects.data && projects.data.projects.length === 0 ? (
        <Empty>
          No runs yet. Start one with <code>flightlog run --project NAME -- python train.py</code>, or
          <code> flightlog.init(project="NAME")</code> in your code.
        </Empty>
      ) : null}
      {projects.data && projects.data.projects.length ? (
        <table class="table projects-table">
          <thead>
            <tr><th>Project</th><th class="num">Runs</th><th class="num">Running</th><th class="num">Failed</th><th>Last run</th></tr>
          </thead>
          <tbody>
            {projects.data.projects.map((p) => (
              <tr key={p.name}>
                <td><Link to={paths.runs(p.name)} class="strong">{p.name}</Link></td>
                <td class="num">{p.runs.toLocaleString()}</td>
                <td class="num">{p.running ? <Link to={paths.runs(p.name, { filter: "status = 'running'" })}>{p.running}</Link> : 0}</td>
                <td class="num">{p.failed ? <Link to={paths.runs(p.name, { filter: "status = 'failed'" })} class="text-danger">{p.failed}</Link> : 0}</td>
                <td title={fmtTime(p.last_created)}>{fmtAgo(p.last_created)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}
