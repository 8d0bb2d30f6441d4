// Goodput: the share of a run's time that did useful work, and where the rest went (queued,
// startup, data stalls, idle GPU, checkpointing, wind-down, retried and thrown-away attempts),
// as one line and one stacked bar at the top of the Timeline tab (GET /runs/{id}/goodput).
import { ApiError, get } from "../../api";
import { Card } from "../../components/ui";
import { fmtDuration } from "../../format";
import { useAsync } from "../../hooks";
import type { Run } from "../../types";

export interface GoodputDoc {
  run: string;
  wall_seconds: number;
  goodput: number | null;
  seconds: Record<string, number>;
  shares: Record<string, number>;
  gpus: number;
  gpu_hours: number;
  cost: number | null;
  wasted_cost: number | null;
  currency: string | null;
  summary: string;
}

const LABELS: Record<string, string> = {
  queued: "queued", startup: "startup", productive: "productive", data_stall: "data stalls", gpu_idle: "idle GPU",
  checkpoint: "checkpointing", wind_down: "wind-down", retried: "retried", thrown_away: "thrown away",
};
const COLORS: Record<string, string> = {
  queued: "#94a3b8", startup: "#a78bfa", productive: "#22c55e", data_stall: "#ef4444", gpu_idle: "#f97316",
  checkpoint: "#0ea5e9", wind_down: "#f59e0b", retried: "#e11d48", thrown_away: "#78716c",
};

export function GoodputCard({ run }: { run: Run }) {
  const doc = useAsync((signal) => get<GoodputDoc>(`runs/${encodeURIComponent(run.id)}/goodput`, undefined, signal), [run.id, run.status]);
  // a server without the triage feature has no such route: the tab simply shows no goodput
  if (doc.error) return doc.error instanceof ApiError && doc.error.noRoute ? null : <p class="muted small">goodput: {doc.error.message}</p>;
  const g = doc.data;
  if (!g || !(g.wall_seconds > 0)) return null;
  const parts = Object.keys(LABELS).filter((c) => (g.shares[c] ?? 0) > 0);
  const money = g.cost !== null ? ` · cost ${g.cost.toFixed(2)} ${g.currency ?? ""}, of it wasted ${(g.wasted_cost ?? 0).toFixed(2)} ${g.currency ?? ""}` : "";
  return (
    <Card title="Goodput" class="goodput" actions={<span class="muted small">{fmtDuration(g.wall_seconds)}{g.gpus ? ` · ${g.gpus} GPU · ${g.gpu_hours.toFixed(2)} GPU-hours` : ""}{money}</span>}>
      <p class="goodput-summary" data-goodput={g.goodput ?? ""}><strong>{g.summary}</strong></p>
      <div class="goodput-bar" role="img" aria-label={g.summary} style={{ display: "flex", height: "14px", borderRadius: "4px", overflow: "hidden" }}>
        {parts.map((c) => (
          <span key={c} data-category={c} title={`${LABELS[c]}: ${(g.shares[c] * 100).toFixed(1)}% (${fmtDuration(g.seconds[c])})`}
            style={{ width: `${g.shares[c] * 100}%`, background: COLORS[c] }} />
        ))}
      </div>
      <p class="muted small goodput-legend">
        {parts.map((c, i) => (
          <span key={c}>{i ? " · " : ""}<span class="swatch" style={{ background: COLORS[c] }} /> {LABELS[c]} {(g.shares[c] * 100).toFixed(0)}%</span>
        ))}
      </p>
    </Card>
  );
}
