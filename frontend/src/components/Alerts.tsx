// Alerts (docs/alerting.md), when the server has the alerts API: firing alerts on the runs
// table, a run's alerts and their history on its overview. Without that API, nothing shows.
import { ApiError, get } from "../api";
import { fmtTime } from "../format";
import { useAsync, useInterval } from "../hooks";
import type { Alert, AlertEvent } from "../types";
import { Card } from "./ui";

/** Firing alerts of a project, by run id (an empty map when the server has no alerts API). */
export function useFiring(project: string): Map<string, Alert[]> {
  const alerts = useAsync((signal) => get<{ alerts: Alert[] }>("alerts", { state: "firing", project, limit: 1000 }, signal)
    .catch((err: Error) => (err instanceof ApiError && (err.noRoute || err.status === 403) ? { alerts: [] } : Promise.reject(err))), [project]);
  useInterval(() => alerts.reload(), 15_000);
  const byRun = new Map<string, Alert[]>();
  for (const a of alerts.data?.alerts ?? []) {
    if (!a.run_id) continue;
    byRun.set(a.run_id, [...(byRun.get(a.run_id) ?? []), a]);
  }
  return byRun;
}

export function AlertChip({ alerts }: { alerts: Alert[] | undefined }) {
  if (!alerts?.length) return null;
  const title = alerts.map((a) => `${a.severity} · ${a.rule}: ${a.summary}`).join("\n");
  return <span class="chip chip-danger alert-chip" title={title} data-alerts={alerts.length}>🔔 {alerts.length}</span>;
}

export function RunAlerts({ runId }: { runId: string }) {
  const data = useAsync(async (signal) => {
    const [alerts, history] = await Promise.all([
      get<{ alerts: Alert[] }>("alerts", { run: runId, limit: 200 }, signal),
      get<{ events: AlertEvent[] }>("alerts/history", { run: runId, limit: 200 }, signal),
    ]);
    return { alerts: alerts.alerts, events: history.events };
  }, [runId]);
  if (data.error || !data.data) return null; // no alerts API on this server (or not allowed): nothing to show
  const { alerts, events } = data.data;
  if (!alerts.length && !events.length) return null;
  return (
    <Card title={`Alerts (${alerts.filter((a) => a.state === "firing").length} firing)`} id="alerts">
      <ul class="alerts">
        {alerts.map((a) => (
          <li key={a.id} class={`alert alert-${a.state}`} data-state={a.state}>
            <span class={`chip ${a.state === "firing" ? "chip-danger" : a.state === "pending" ? "chip-warn" : ""}`}>{a.state}</span>
            <strong> {a.rule}</strong> <span class="muted small">{a.severity}</span>
            <div>{a.summary}</div>
            <div class="muted small">
              {a.fired_at ? `fired ${fmtTime(a.fired_at)}` : a.active_since ? `since ${fmtTime(a.active_since)}` : ""}
              {a.resolved_at ? ` · resolved ${fmtTime(a.resolved_at)}${a.resolved_reason ? ` (${a.resolved_reason})` : ""}` : ""}
              {a.silenced_by ? ` · silenced` : ""}
            </div>
          </li>
        ))}
      </ul>
      {events.length ? (
        <details class="alert-history">
          <summary>History ({events.length})</summary>
          <table class="table compact small">
            <tbody>
              {events.map((e, i) => (
                <tr key={i}><td>{fmtTime(e.time)}</td><td>{e.event}</td><td>{e.rule ?? ""}</td></tr>
              ))}
            </tbody>
          </table>
        </details>
      ) : null}
    </Card>
  );
}
