"""Versioned schema migrations of the embedded SQLite store.

Each migration is a list of statements applied in one transaction; ``meta.schema_version``
records the last one applied. A store older than the code is upgraded on open (the statements
are additive); a store newer than the code is refused with instructions.

Why series are chunked: one row per metric point or log line costs ~3 µs to insert and
~1.3 µs to read back. A chunk row holds the columnar arrays of one flush of one metric (or a
block of log events) so that ingest and reads cost per chunk, not per point.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: the first schema.
    [
        """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
        """CREATE TABLE projects (
            name TEXT PRIMARY KEY,
            created REAL NOT NULL
        )""",
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT,
            parent_id TEXT,
            status TEXT NOT NULL DEFAULT 'created',
            end_reason TEXT,
            created REAL,
            queued REAL,
            started REAL,
            ended REAL,
            exit_code INTEGER,
            signal INTEGER,
            attempt INTEGER NOT NULL DEFAULT 1,
            host TEXT,
            pid INTEGER,
            owner TEXT,
            failure TEXT,          -- JSON: exception, message, frames, last_lines, workload
            timeline TEXT,         -- JSON: named instants (process_start, first_output, ...)
            updated REAL
        )""",
        "CREATE INDEX runs_project_created ON runs(project, created)",
        "CREATE INDEX runs_status ON runs(status)",
        "CREATE INDEX runs_parent ON runs(parent_id)",
        """CREATE TABLE params (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,   -- display text: a string as is, anything else as JSON
            num REAL,              -- the value when it is an int or float (for comparisons)
            kind TEXT NOT NULL,    -- str | int | float | bool | null | json (to read it back)
            PRIMARY KEY (run_id, key)
        ) WITHOUT ROWID""",
        "CREATE INDEX params_key_num ON params(key, num)",
        """CREATE TABLE tags (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        ) WITHOUT ROWID""",
        "CREATE INDEX tags_key_value ON tags(key, value)",
        """CREATE TABLE notes (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            time REAL NOT NULL,
            author TEXT,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX notes_run ON notes(run_id, time)",
        """CREATE TABLE context (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            data TEXT NOT NULL,    -- JSON
            PRIMARY KEY (run_id, writer)
        ) WITHOUT ROWID""",
        """CREATE TABLE metric_series (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            count INTEGER NOT NULL,
            nonfinite INTEGER NOT NULL DEFAULT 0,
            min REAL,
            max REAL,
            first_step INTEGER,
            last_step INTEGER,
            last_value REAL,
            first_time REAL,
            last_time REAL,
            PRIMARY KEY (run_id, name)
        ) WITHOUT ROWID""",
        "CREATE INDEX metric_series_name_last ON metric_series(name, last_value)",
        """CREATE TABLE metric_chunks (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            writer TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            n INTEGER NOT NULL,
            first_step INTEGER NOT NULL,
            last_step INTEGER NOT NULL,
            steps BLOB NOT NULL,   -- little-endian int64
            times BLOB NOT NULL,   -- little-endian float64, epoch seconds
            vals BLOB NOT NULL     -- little-endian float64
        )""",
        "CREATE INDEX metric_chunks_run_name ON metric_chunks(run_id, name, first_step)",
        """CREATE TABLE log_chunks (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            n INTEGER NOT NULL,
            first_time REAL NOT NULL,
            last_time REAL NOT NULL,
            max_level INTEGER NOT NULL,
            attempts TEXT NOT NULL,  -- comma-separated attempts present, for pruning
            data BLOB NOT NULL       -- msgpack of columnar events (see store/logcodec.py)
        )""",
        "CREATE INDEX log_chunks_run_time ON log_chunks(run_id, first_time)",
        """CREATE TABLE spans (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            start REAL NOT NULL,
            end REAL NOT NULL,
            attempt INTEGER NOT NULL,
            writer TEXT NOT NULL,
            sampled INTEGER NOT NULL DEFAULT 0,   -- 1: one raw span of an aggregated stage
            attrs TEXT                            -- JSON
        )""",
        "CREATE INDEX spans_run ON spans(run_id, start)",
        """CREATE TABLE stage_stats (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            writer TEXT NOT NULL,
            count INTEGER NOT NULL,
            total REAL NOT NULL,
            min REAL NOT NULL,
            max REAL NOT NULL,
            first_start REAL,
            last_end REAL,
            hist TEXT NOT NULL,   -- JSON list of counts per bucket (see sdk/stages.py)
            PRIMARY KEY (run_id, name, writer)
        ) WITHOUT ROWID""",
        """CREATE TABLE resource_samples (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            time REAL NOT NULL,
            data TEXT NOT NULL    -- JSON of one sample
        )""",
        "CREATE INDEX resource_samples_run ON resource_samples(run_id, time)",
        """CREATE TABLE artifacts (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            role TEXT NOT NULL,      -- input | output
            kind TEXT,               -- file, dir, model, checkpoint, dataset, manifest, ...
            path TEXT NOT NULL,      -- the name under the run (relative)
            source TEXT,             -- where it was on disk when logged
            size INTEGER,
            sha256 TEXT,             -- content digest (manifest digest for directories)
            uri TEXT,                -- where the bytes are kept, if kept
            step INTEGER,
            time REAL NOT NULL,
            attempt INTEGER NOT NULL,
            meta TEXT                -- JSON (manifest summary, ...)
        )""",
        "CREATE INDEX artifacts_run ON artifacts(run_id)",
        "CREATE INDEX artifacts_sha ON artifacts(sha256)",
        """CREATE TABLE counters (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (run_id, name)
        ) WITHOUT ROWID""",
        """CREATE TABLE evidence (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            kind TEXT NOT NULL,      -- profile, validation, drift, eval, manifest, ...
            name TEXT NOT NULL,
            time REAL NOT NULL,
            data TEXT NOT NULL       -- JSON
        )""",
        "CREATE INDEX evidence_run_kind ON evidence(run_id, kind)",
        """CREATE TABLE ingested (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            last_seq INTEGER NOT NULL,
            updated REAL NOT NULL,
            PRIMARY KEY (run_id, writer)
        ) WITHOUT ROWID""",
    ],
    # 2: API tokens of the server (flightlog token create|ls|revoke). Only a SHA-256 of each
    # secret is kept; the secret is shown once, when the token is created.
    [
        """CREATE TABLE tokens (
            id TEXT PRIMARY KEY,       -- public part, shown by `token ls`, used to revoke
            hash TEXT NOT NULL UNIQUE, -- sha256 hex of the whole token
            role TEXT NOT NULL,        -- reader | writer | admin
            project TEXT,              -- NULL: every project
            name TEXT,
            created REAL NOT NULL,
            last_used REAL,
            revoked REAL
        ) WITHOUT ROWID""",
    ],
    # 3: alerts (flightlog.alerts). One row per episode of an alert (pending → firing →
    # resolved); at most one open episode per identity (rule + labels), which is what makes
    # concurrent evaluators agree on who fires and who notifies. Events keep the history.
    [
        """CREATE TABLE alerts (
            id TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,  -- sha256 of rule + labels: the alert's identity
            rule TEXT NOT NULL,
            kind TEXT NOT NULL,
            severity TEXT NOT NULL,
            labels TEXT NOT NULL,       -- JSON
            run_id TEXT,                -- the run it is about (the latest run, for a group)
            project TEXT,
            state TEXT NOT NULL,        -- pending | firing | resolved
            value REAL,
            summary TEXT NOT NULL DEFAULT '',
            evidence TEXT,              -- JSON
            active_since REAL,
            fired_at REAL,
            resolved_at REAL,
            resolved_reason TEXT,
            notified_at REAL,           -- last firing notification claimed (repeats count from it)
            resolved_notified_at REAL,
            silenced_by TEXT,
            updated REAL NOT NULL
        )""",
        "CREATE UNIQUE INDEX alerts_open ON alerts(fingerprint) WHERE state IN ('pending', 'firing')",
        "CREATE INDEX alerts_fingerprint ON alerts(fingerprint)",
        "CREATE INDEX alerts_run ON alerts(run_id, updated)",
        "CREATE INDEX alerts_state ON alerts(state, updated)",
        """CREATE TABLE alert_events (
            id INTEGER PRIMARY KEY,
            alert_id TEXT NOT NULL,
            time REAL NOT NULL,
            event TEXT NOT NULL,        -- pending | firing | resolved | notified | notify_failed | silenced
            detail TEXT                 -- JSON
        )""",
        "CREATE INDEX alert_events_alert ON alert_events(alert_id, time)",
        """CREATE TABLE alert_silences (
            id TEXT PRIMARY KEY,
            rule TEXT NOT NULL,         -- a rule name or a glob
            matchers TEXT NOT NULL,     -- JSON: label -> value (globs allowed)
            starts REAL NOT NULL,
            ends REAL NOT NULL,
            created REAL NOT NULL,
            author TEXT,
            comment TEXT
        )""",
        "CREATE INDEX alert_silences_ends ON alert_silences(ends)",
    ],
    # 4: the server's security bookkeeping. Which projects have shown they hold a blob (by
    # uploading it, or by an artifact of theirs pointing at it): a token limited to a project
    # may only see and reference content of its own project. Web UI sessions: the cookie holds
    # a random session id (only its SHA-256 is kept), never the API token; signing out deletes
    # the row, revoking the token ends every session made with it.
    [
        """CREATE TABLE blob_projects (
            sha256 TEXT NOT NULL,
            project TEXT NOT NULL,
            PRIMARY KEY (sha256, project)
        ) WITHOUT ROWID""",
        """CREATE TABLE sessions (
            hash TEXT PRIMARY KEY,     -- sha256 hex of the session id in the cookie
            token_id TEXT NOT NULL,    -- the token that signed in (its role and project apply)
            created REAL NOT NULL,
            expires REAL NOT NULL
        ) WITHOUT ROWID""",
        "CREATE INDEX sessions_token ON sessions(token_id)",
    ],
    # 5: the writers of a run (issue 28): one row per writer, from its `writer` record; in a
    # distributed job each non-forked writer is one rank. Heartbeats (any record of the writer),
    # the last step it logged, its own end (or `lost`, settled by a peer or a sync) and the first
    # error its rank logged. A run whose ranks are peers derives its end from these rows
    # (store/sql/ranks.py).
    [
        """CREATE TABLE run_writers (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            host TEXT,
            pid INTEGER,
            pstart REAL,             -- the process's start and the host's boot (journal/liveness.py)
            boot REAL,
            owner INTEGER NOT NULL DEFAULT 0,   -- 1: this writer's process sets the run's status
            forked INTEGER NOT NULL DEFAULT 0,  -- 1: a forked child (a data-loader worker) of its rank
            peer INTEGER NOT NULL DEFAULT 0,    -- 1: a rank of a job whose ranks own the run together
            attempt INTEGER NOT NULL DEFAULT 1,
            rank INTEGER,            -- NULL: not a rank (a runner, a single process)
            local_rank INTEGER,
            world_size INTEGER,
            node_rank INTEGER,
            local_world_size INTEGER,
            restart INTEGER NOT NULL DEFAULT 0, -- the launcher's restart count (TORCHELASTIC_RESTART_COUNT)
            launcher TEXT,
            job_key TEXT,
            started REAL NOT NULL,   -- the writer record's time
            heartbeat REAL,          -- the newest record time of the writer (its clock)
            received REAL,           -- when the store last received a record of the writer (its clock)
            last_step INTEGER,
            last_step_time REAL,
            ended REAL,
            status TEXT,             -- succeeded | failed | stopped | killed | crashed | lost; NULL: no end yet
            end_reason TEXT,
            exit_code INTEGER,
            signal INTEGER,
            failure TEXT,            -- JSON, a failed rank's own failure summary
            first_error TEXT,        -- the first error line its rank logged
            first_error_time REAL,
            PRIMARY KEY (run_id, writer)
        ) WITHOUT ROWID""",
        "CREATE INDEX run_writers_rank ON run_writers(run_id, rank)",
        # the rank whose value `last_value` is, when ranks tie at the last step: the lowest wins
        "ALTER TABLE metric_series ADD COLUMN last_rank INTEGER",
    ],
    # 6: PostgreSQL's `xid` of appended rows (issue 32): nothing here, where one writer at a
    # time commits ids in order and the change feeds read by id.
    [],
    # 7: two indexes no query of SQLite's reads (issue 32). A filter or an order on a param or
    # a metric is a correlated lookup by the run (``query/sql.py``: ``EXISTS (SELECT 1 FROM params
    # p WHERE p.run_id = r.id AND p.key = ?…)``, ``LEFT JOIN metric_series o ON o.run_id = r.id AND
    # o.name = ?``), which SQLite answers from the primary keys (run_id, key) and (run_id, name)
    # whatever the statistics; every other read is by run. Kept up to date, they cost each run one
    # leaf per param name and one per metric name (a 20-param, 5-metric run: ~33 of its ~63
    # pages at commit, copied back again at the next checkpoint). PostgreSQL keeps them (its
    # planner may turn such an EXISTS into a semi-join that starts from (key, num)), and has no
    # migration of this number: its schema did not change, and a version it gained for nothing
    # would make the servers of a deployment that were not upgraded yet refuse its database.
    [
        "DROP INDEX IF EXISTS params_key_num",
        "DROP INDEX IF EXISTS metric_series_name_last",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)
