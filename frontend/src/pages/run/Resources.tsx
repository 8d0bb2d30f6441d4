// Resources: CPU, memory (with the limit), GPU utilization and memory, disk and network, with
// the run's stages drawn as bands behind every chart ("GPU idle during data loading" at a glance).
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { get } from "../../api";
import { Chart, stageBands, uPlot, xAxis, yAxis, type Band } from "../../components/Chart";
import { Empty, ErrorBox, FINISHED, Loading, Toggle } from "../../components/ui";
import { fmtBytes, fmtDuration, fmtNum } from "../../format";
import { useAsync, useInterval } from "../../hooks";
import { Link, paths } from "../../router";
import { colorOf, stageColors } from "../../theme";
import type { Evidence, ResourceSample, Run, Stage } from "../../types";

const PER_BATCH = 50; // a stage seen more often than this is drawn on the timeline, not as bands

export function coarseStages(stages: Stage[]): { bands: Band[]; perBatch: Stage[]; names: string[]; color: (n: string) => string } {
  const color = stageColors(stages.map((s) => s.name));
  const bands: Band[] = [];
  const perBatch: Stage[] = [];
  const names: string[] = [];
  for (const s of stages) {
    if (/^attempt \d+$/.test(s.name)) continue;
    if (s.count > PER_BATCH) {
      perBatch.push(s);
      continue;
    }
    names.push(s.name);
    for (const sp of s.spans) {
      if (sp.sampled) continue;
      bands.push({ start: Date.parse(sp.start) / 1000, end: Date.parse(sp.end) / 1000, label: s.name, color: color(s.name) });
    }
  }
  return { bands, perBatch, names, color };
}

function rate(t: number[], v: (number | null | undefined)[]): (number | null)[] {
  return v.map((x, i) => {
    if (i === 0 || x === null || x === undefined) return null;
    const prev = v[i - 1];
    const dt = t[i] - t[i - 1];
    if (prev === null || prev === undefined || dt <= 0) return null;
    return Math.max(0, (x - prev) / dt);
  });
}

interface Panel {
  id: string;
  title: string;
  unit: (v: number) => string;
  series: { label: string; values: (number | null)[]; color: string; dash?: number[] }[];
  note?: string;
}

export function Resources({ run }: { run: Run }) {
  const running = !FINISHED.has(run.status);
  const [samples, setSamples] = useState<ResourceSample[] | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [showBands, setShowBands] = useState(true);
  const stages = useAsync((signal) => get<{ stages: Stage[] }>(`runs/${run.id}/stages`, undefined, signal), [run.id, run.status]);
  const config = useAsync((signal) => get<{ evidence: Evidence[] }>(`runs/${run.id}/evidence`, { kind: "runner", name: "config" }, signal), [run.id]);

  useEffect(() => {
    const ctrl = new AbortController();
    get<{ samples: ResourceSample[] }>(`runs/${run.id}/resources`, undefined, ctrl.signal).then(
      (d) => setSamples(d.samples.slice().sort((a, b) => a.time - b.time)),
      (err: Error) => err.name !== "AbortError" && setError(err),
    );
    return () => ctrl.abort();
  }, [run.id, run.status]);
  useInterval(() => {
    const last = samples?.[samples.length - 1];
    get<{ samples: ResourceSample[] }>(`runs/${run.id}/resources`, { since: last ? String(last.time + 1e-6) : undefined }).then((d) => {
      if (d.samples.length) setSamples((cur) => (cur ?? []).concat(d.samples).sort((a, b) => a.time - b.time));
    }, () => undefined);
  }, running ? 5000 : null);

  const { bands, perBatch, names, color } = useMemo(() => coarseStages(stages.data?.stages ?? []), [stages.data]);
  const bandsRef = useRef<Band[]>([]);
  bandsRef.current = showBands ? bands : [];

  const limitFromConfig = config.data?.evidence?.[0]?.data?.memory_limit_bytes;
  const panels = useMemo((): Panel[] => {
    if (!samples || !samples.length) return [];
    const t = samples.map((s) => s.time);
    const col = (k: string) => samples.map((s) => (typeof s[k] === "number" ? (s[k] as number) : null));
    const out: Panel[] = [];
    const cores = samples.find((s) => s.cpu_count)?.cpu_count;
    out.push({
      id: "cpu", title: "CPU", unit: (v) => `${fmtNum(Math.round(v))}%`,
      series: [{ label: "CPU %", values: col("cpu_percent"), color: colorOf(0) }],
      note: cores ? `100% is one core; this host has ${cores}` : undefined,
    });
    const limit = [...samples].reverse().find((s) => s.cgroup_memory_limit)?.cgroup_memory_limit ??
      (typeof limitFromConfig === "number" ? limitFromConfig : null);
    const mem: Panel["series"] = [{ label: "RSS", values: col("rss_bytes"), color: colorOf(1) }];
    if (samples.some((s) => typeof s.cgroup_memory_usage === "number")) mem.push({ label: "cgroup usage", values: col("cgroup_memory_usage"), color: colorOf(3) });
    if (limit) mem.push({ label: "limit", values: t.map(() => limit), color: "#dc2626", dash: [6, 4] });
    out.push({
      id: "memory", title: "Memory", unit: fmtBytes, series: mem,
      note: limit ? `limit ${fmtBytes(limit)}` : "no memory limit was set",
    });
    const gpuIdx = [...new Set(samples.flatMap((s) => (s.gpus ?? []).map((g) => g.index)))].sort((a, b) => a - b);
    const gpu = (i: number, k: "utilization_percent" | "memory_used_bytes" | "memory_total_bytes") =>
      samples.map((s) => {
        const g = (s.gpus ?? []).find((x) => x.index === i);
        const v = g?.[k];
        return typeof v === "number" ? v : null;
      });
    if (gpuIdx.length) {
      out.push({ id: "gpu-util", title: "GPU utilization", unit: (v) => `${Math.round(v)}%`,
        series: gpuIdx.map((i, k) => ({ label: `GPU ${i}`, values: gpu(i, "utilization_percent"), color: colorOf(k + 4) })) });
      const gm: Panel["series"] = gpuIdx.map((i, k) => ({ label: `GPU ${i} used`, values: gpu(i, "memory_used_bytes"), color: colorOf(k + 4) }));
      const total = gpu(gpuIdx[0], "memory_total_bytes").find((v) => v !== null);
      if (total) gm.push({ label: "GPU 0 total", values: t.map(() => total), color: "#dc2626", dash: [6, 4] });
      out.push({ id: "gpu-mem", title: "GPU memory", unit: fmtBytes, series: gm });
    }
    out.push({
      id: "disk", title: "Disk I/O", unit: (v) => `${fmtBytes(v)}/s`,
      series: [
        { label: "read", values: rate(t, col("disk_read_bytes")), color: colorOf(2) },
        { label: "write", values: rate(t, col("disk_write_bytes")), color: colorOf(4) },
      ],
    });
    out.push({
      id: "network", title: "Network", unit: (v) => `${fmtBytes(v)}/s`,
      series: [
        { label: "received", values: rate(t, col("net_recv_bytes")), color: colorOf(5) },
        { label: "sent", values: rate(t, col("net_sent_bytes")), color: colorOf(6) },
      ],
      note: "the host's interfaces",
    });
    return out;
  }, [samples, limitFromConfig]);

  if (error) return <ErrorBox error={error} what="resource samples" />;
  if (!samples) return <Loading what="resource samples" />;
  const hasGpu = panels.some((p) => p.id === "gpu-util");
  const t = samples.map((s) => s.time);
  const span = t.length ? t[t.length - 1] - t[0] : 0;
  return (
    <div class="resources-tab">
      <div class="chart-controls">
        <Toggle name="bands" checked={showBands} onChange={setShowBands}>Stage bands</Toggle>
        <div class="stage-legend" aria-label="stages">
          {names.map((n) => <span key={n} class="legend-chip"><span class="swatch" style={{ background: color(n) }} />{n}</span>)}
        </div>
        {perBatch.length ? (
          <span class="muted small">per-batch stages ({perBatch.map((s) => `${s.name} ×${s.count}`).join(", ")}) are on the <Link to={paths.run(run.project, run.id, "timeline")}>timeline</Link></span>
        ) : null}
      </div>
      {!samples.length ? <Empty>No resource samples{running ? " yet" : ""}. Runs under <code>flightlog run</code> (or with the SDK's sampler on) are sampled every second.</Empty> : (
        <>
          <p class="muted small">{samples.length} sample{samples.length === 1 ? "" : "s"} over {fmtDuration(span)}{hasGpu ? "" : " · no GPU was visible to the run"}</p>
          <div class="chart-grid">
            {panels.map((p) => (
              <div class="chart-card" key={p.id} data-panel={p.id}>
                <div class="metric-head"><h3>{p.title}</h3>{p.note ? <span class="muted small">{p.note}</span> : null}</div>
                <Chart label={`${p.title} chart`} data={[t, ...p.series.map((s) => s.values)] as uPlot.AlignedData}
                  rebuildKey={`${p.id}|${p.series.length}|${showBands}|${bands.length}`}
                  build={(width) => ({
                    width, height: 200,
                    series: [{ label: "time" }, ...p.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, dash: s.dash, points: { show: false }, value: (_u: uPlot, v: number | null) => (v === null ? "—" : p.unit(v)) }))],
                    scales: { x: { time: true }, y: { range: (_u: uPlot, lo: number, hi: number) => [Math.min(0, lo), hi > 0 ? hi * 1.08 : 1] as uPlot.Range.MinMax } },
                    axes: [xAxis("time"), yAxis(p.unit)],
                    cursor: { sync: { key: `res-${run.id}` } },
                    legend: { live: true },
                    plugins: [stageBands(() => bandsRef.current)],
                  })} />
              </div>
            ))}
          </div>
        </>
      )}
    </div>
  );
}
