// The JSON shapes of flightlog's HTTP API v1 (docs/server.md, /api/v1/openapi.json).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Numbers that were NaN or infinite arrive as the strings "NaN", "Infinity", "-Infinity". */
export type JsonNumber = number | string | null;

export interface Project {
  name: string;
  runs: number;
  /** of them, serving replicas (runs of kind serving) */
  serving_runs?: number;
  last_created: string | null;
  running: number;
  failed: number;
}

export interface Frame {
  file: string;
  line: number | null;
  function: string;
  code?: string | null;
}

export interface Failure {
  exception?: string | null;
  message?: string | null;
  frames?: Frame[];
  traceback?: string | null;
  category?: string | null;
  exit_code?: number | null;
  signal?: number | null;
  end_reason?: string | null;
  last_lines?: string[];
  [key: string]: unknown;
}

export interface MetricSummary {
  name: string;
  count: number;
  nonfinite: number;
  min: JsonNumber;
  max: JsonNumber;
  last: JsonNumber;
  last_step: number | null;
  first_step: number | null;
  first_time: string | null;
  last_time: string | null;
}

export interface Run {
  id: string;
  project: string;
  name: string | null;
  status: string;
  end_reason: string | null;
  parent_id: string | null;
  attempt: number;
  exit_code: number | null;
  signal: number | null;
  duration: number | null;
  queue_wait: number | null;
  /** training (any workload) or serving (a model server's replica: its own kind, out of the runs table by default) */
  kind?: "training" | "serving" | string;
  created: string | null;
  queued: string | null;
  started: string | null;
  ended: string | null;
  params: Record<string, Json>;
  tags: Record<string, string>;
  metrics: Record<string, JsonNumber>;
  host?: string | null;
  pid?: number | null;
  updated?: string | null;
  failure?: Failure | null;
  timeline?: Record<string, string>;
  metric_summaries?: Record<string, MetricSummary>;
  counters?: Record<string, number>;
  /** listings only: the taxonomy category of a failed, crashed or killed run */
  cause?: string | null;
  /** listings only: the metrics with a NaN or infinite point */
  nonfinite_metrics?: string[];
}

export interface RunPage {
  runs: Run[];
  next_cursor: string | null;
}

export interface LogEvent {
  time: string;
  stream: string;
  level: string;
  level_no?: number;
  component: string | null;
  message: string;
  fields: Record<string, Json> | null;
  rank: number | null;
  attempt: number;
  stage: string | null;
}

export interface LogPage {
  events: LogEvent[];
  next_cursor: string | null;
}

export interface Buckets {
  name: string;
  points: number;
  buckets: number;
  step: number[];
  step_end: number[];
  time: string[];
  count: number[];
  nonfinite: number[];
  min: JsonNumber[];
  min_step: (number | null)[];
  max: JsonNumber[];
  max_step: (number | null)[];
  mean: JsonNumber[];
  first: JsonNumber[];
  last: JsonNumber[];
}

export interface Gpu {
  index: number;
  name?: string | null;
  utilization_percent?: number | null;
  memory_used_bytes?: number | null;
  memory_total_bytes?: number | null;
  power_watts?: number | null;
  temperature_c?: number | null;
  process_memory_bytes?: number | null;
}

export interface ResourceSample {
  time: number;
  cpu_percent?: number | null;
  cpu_seconds?: number | null;
  rss_bytes?: number | null;
  threads?: number | null;
  cpu_count?: number | null;
  disk_read_bytes?: number | null;
  disk_write_bytes?: number | null;
  net_sent_bytes?: number | null;
  net_recv_bytes?: number | null;
  host_memory_total?: number | null;
  cgroup_memory_usage?: number | null;
  cgroup_memory_limit?: number | null;
  gpus?: Gpu[];
  [key: string]: unknown;
}

export interface Span {
  name: string;
  start: string;
  end: string;
  duration: number;
  attempt: number;
  sampled: boolean;
  attrs: Record<string, Json> | null;
}

export interface Stage {
  name: string;
  count: number;
  total: number;
  mean: number;
  min: number;
  max: number;
  first_start: string | null;
  last_end: string | null;
  hist: number[];
  spans: Span[];
}

export interface Artifact {
  id: string;
  run_id: string;
  role: "input" | "output" | string;
  kind: string | null;
  path: string;
  source: string | null;
  size: number | null;
  sha256: string | null;
  uri: string | null;
  step: number | null;
  time: string;
  attempt: number;
  meta: Record<string, Json> | null;
}

export interface Lineage {
  run: string;
  parent: string | null;
  children: string[];
  inputs: { artifact: Artifact; produced_by: string[] }[];
  outputs: { artifact: Artifact; used_by: string[] }[];
}

export interface Note {
  id: string;
  run_id: string;
  time: string;
  author: string | null;
  text: string;
}

export interface Evidence {
  kind: string;
  name: string;
  time: string;
  data: Record<string, Json>;
}

export interface Context {
  python?: string;
  python_executable?: string;
  platform?: string;
  host?: string;
  user?: string;
  cpu_count?: number;
  packages?: Record<string, string>;
  container?: Record<string, Json> | null;
  git?: {
    commit?: string;
    dirty?: boolean;
    branch?: string;
    root?: string;
    diff_sha256?: string;
    changed_files?: string[];
    remote?: string;
  } | null;
  command?: string[];
  cwd?: string;
  pid?: number;
  env?: Record<string, string>;
  [key: string]: unknown;
}

export interface Finding {
  category: string;
  confidence: number;
  summary: string;
  evidence?: { source: string; detail: string; at?: string | null }[];
  next_steps?: string[];
  [key: string]: unknown;
}

export interface Diagnosis {
  run: string;
  status: string;
  kind: string;
  findings: Finding[];
  baseline?: unknown;
  /** How the baseline was chosen (the one choice of diagnose, compare and triage), and why none when none. */
  baseline_choice?: { run: string | null; choice: string | null; reason: string } | null;
  runbook?: RunbookEntry[];
  rightsizing?: Rightsizing | null;
  [key: string]: unknown;
}

/** A runbook entry the diagnosis matched (docs/troubleshooting.md: runbook). */
export interface RunbookEntry {
  id: string;
  title: string;
  advice: string[];
  links?: string[];
  source: string;
  matched: string[];
}

/** Requests with headroom from observed peaks (GET api/v1/runs/RUN/rightsizing). */
export interface Rightsizing {
  memory: { peak_bytes: number | null; requested_bytes: number | null; recommended_bytes: number | null; headroom?: number; basis: string | null };
  cpu: { peak_cores: number | null; p95_cores: number | null; avg_cores: number | null; recommended_cores: number | null; samples: number };
  gpu: { memory_peak_bytes: number | null } | null;
  request: { memory?: string | null; cpu?: string | null };
  flags: { kind: string; run: string; attempt: number; detail: string }[];
}

export interface Principal {
  role: string;
  project: string | null;
  token_id: string | null;
  via: string;
  auth: boolean;
}

/** An alert (docs/alerting.md: GET api/v1/alerts). */
export interface Alert {
  id: string;
  rule: string;
  kind: string;
  severity: string;
  state: "pending" | "firing" | "resolved" | string;
  labels: Record<string, string>;
  run_id: string | null;
  project: string | null;
  value: JsonNumber;
  summary: string;
  active_since: string | null;
  fired_at: string | null;
  resolved_at: string | null;
  resolved_reason: string | null;
  silenced_by: string | null;
}

/** What happened to an alert (GET api/v1/alerts/history). */
export interface AlertEvent {
  alert_id: string;
  time: string;
  event: string;
  detail: Record<string, Json>;
  rule: string | null;
  run_id: string | null;
}

/** A registered model (GET api/v1/models, docs/models.md). */
export interface RegisteredModel {
  project: string;
  name: string;
  description: string | null;
  tags: Record<string, string>;
  protected_aliases: string[];
  created: string;
  latest_version: number;
  aliases: Record<string, number>;
  versions?: ModelVersion[];
}

export interface ModelVersion {
  project: string;
  name: string;
  version: number;
  ref: string;
  run_id: string;
  source: string;
  artifact_path: string;
  digest: string | null;
  size: number | null;
  description: string | null;
  tags: Record<string, string>;
  aliases: string[];
  created: string;
  created_by: string | null;
}

export interface AliasChange {
  alias: string;
  from_version: number | null;
  to_version: number | null;
  time: string;
  actor: string | null;
}

/** GET api/v1/models/NAME/versions/V?lineage=true */
export interface VersionLineage {
  version: ModelVersion;
  run: { id: string; name: string | null; status: string; project: string };
  inputs: { artifact: Artifact; produced_by: string[] }[];
  manifests: { name: string | null; data: Record<string, Json> | null }[];
}

export interface Deployment {
  project: string;
  endpoint: string;
  env: string;
  model: string;
  version: number;
  ref: string;
  updated: string;
  updated_by: string | null;
}

export interface ReplicaRow {
  run_id: string;
  endpoint: string;
  env: string | null;
  version: string | null;
  replica: string | null;
  state: "serving" | "gone" | string;
  status: string;
  started: string | null;
  heartbeat: string | null;
  ended: string | null;
}

export interface ServingMinute {
  version: string;
  minute: number;
  time: string;
  requests: number;
  errors: number;
  error_rate: number | null;
  client_errors?: number;
  client_error_rate?: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  replicas: number;
}

/** A version's totals over the window it served (serving stats --by version). */
export interface VersionStats {
  version: string;
  requests: number;
  errors: number;
  error_rate: number | null;
  client_errors: number;
  client_error_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
  throughput_per_min: number | null;
  minutes: number;
  first: string | null;
  last: string | null;
  replicas: number;
  error_types: Record<string, number>;
  error_messages?: Record<string, string>;
}

export interface Rollout {
  /** first traffic of the new version (the deploy time when none yet) */
  time: string;
  deployed_at: string | null;
  first_traffic_at: string | null;
  kind: "rollout" | "rollback" | string;
  from_version: number;
  to_version: number;
  model: string;
  actor: string | null;
  replicas: number;
}

/** A distribution as the drift document shows it (training side or live side). */
export interface DistributionSummary {
  kind: string;
  type: string;
  count: number;
  nulls: number;
  mean?: number | null;
  std?: number | null;
  min?: number | null;
  max?: number | null;
  p5?: number | null;
  p25?: number | null;
  p50?: number | null;
  p75?: number | null;
  p95?: number | null;
  top?: { value: string; share: number }[];
  distinct?: number;
}

export interface FeatureDriftRow {
  feature: string;
  test: string;
  statistic: number | null;
  p_value: number | null;
  threshold: number;
  drifted: boolean;
  types?: Record<string, number>;
  training?: DistributionSummary | null;
  live?: DistributionSummary | null;
}

/** GET api/v1/serving/ENDPOINT/drift */
export interface EndpointDrift {
  endpoint: string;
  env: string | null;
  since: string;
  drifted: string[];
  versions: {
    version: string;
    model: string | null;
    training_run: string | null;
    rows: number;
    failed: number;
    judged: boolean;
    features: FeatureDriftRow[];
    notes: string[];
  }[];
}

/** GET api/v1/deployments/ENDPOINT/timeline */
export interface DeploymentTimeline {
  endpoint: string;
  env: string;
  project: string;
  model: string;
  version: number;
  desired: { time: string; version: number; model: string; ref: string | null; actor: string | null; from_version: number | null }[];
  replicas: ReplicaRow[];
  minutes: ServingMinute[];
  versions?: VersionStats[];
  rollouts: Rollout[];
  alerts: Alert[];
}

/** GET api/v1/deployments/ENDPOINT/diagnosis (when the server has it) */
export interface DeploymentDiagnosis {
  headline: string;
  changes: { time: string | null; kind: string; summary: string }[];
  before: { version: number | string; run_id: string | null } | null;
  after: { version: number | string; run_id: string | null } | null;
  differences: { kind: string; summary: string }[];
  text: string;
}

/** One rank of a distributed run (GET api/v1/runs/RUN/ranks; docs/distributed.md). */
export interface RankInfo {
  rank: number;
  local_rank: number | null;
  world_size: number | null;
  node_rank?: number | null;
  host: string | null;
  pid: number | null;
  restart: number;
  attempt: number;
  state: "running" | "succeeded" | "failed" | "stopped" | "killed" | "lost" | "hung" | string;
  started: string | null;
  last_heartbeat: string | null;
  last_step: number | null;
  last_step_time: string | null;
  ended: string | null;
  end_reason: string | null;
  exit_code: number | null;
  signal: number | null;
  first_error: { message: string; time: string | null } | null;
  launcher: string | null;
  writer?: string | null;
}

/** A piece of a run's evidence (GET api/v1/runs/RUN/evidence). */
export interface EvidenceItem<T = Record<string, unknown>> {
  kind: string;
  name: string;
  time: string;
  data: T;
}

/** `stall` evidence: a process stopped (or resumed) making progress (docs/distributed.md). */
export interface Stall {
  rank?: number | null;
  pid?: number | null;
  state: "stalled" | "resumed";
  since: number | null;
  time: number;
  threshold_s?: number | null;
  group_timeout_s?: number | null;
}

/** The culprit of a distributed run's finding (contract C5). */
export interface Culprit {
  /** null when no rank caused it: the ranks in ``alike`` failed with the same error */
  rank: number | null;
  alike?: number[];
  host: string | null;
  where: { file: string; line: number | null; function: string } | null;
  collective: { op: string; seq: number } | null;
  stuck_s?: number;
}

export interface Victim {
  rank: number;
  waited_s: number | null;
  error: string | null;
}
