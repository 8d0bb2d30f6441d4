"""Versioned schema migrations of the PostgreSQL store: the SQLite store's data model, typed.

The tables, columns and numbering mirror ``store/sqlite/migrations.py`` one for one (migration
N here is migration N there), so ``flightlog migrate-store`` copies rows without translating
them and both stores answer the same questions the same way. Differences are only of dialect:
``BIGSERIAL`` ids, ``DOUBLE PRECISION``, ``BYTEA`` for the columnar chunks, ``"end"`` quoted.

A NaN is stored as NULL in the summary columns (``metric_series.last_value``, ``params.num``),
as SQLite does, so that a filter such as ``metric.loss > 1`` never matches a NaN in one backend
and not in the other.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: the first schema.
    [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE projects (name TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL)",
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT,
            parent_id TEXT,
            status TEXT NOT NULL DEFAULT 'created',
            end_reason TEXT,
            created DOUBLE PRECISION,
            queued DOUBLE PRECISION,
            started DOUBLE PRECISION,
            ended DOUBLE PRECISION,
            exit_code BIGINT,
            signal BIGINT,
            attempt BIGINT NOT NULL DEFAULT 1,
            host TEXT,
            pid BIGINT,
            owner TEXT,
            failure TEXT,
            timeline TEXT,
            updated DOUBLE PRECISION
        )""",
        "CREATE INDEX runs_project_created ON runs(project, created)",
        "CREATE INDEX runs_status ON runs(status)",
        "CREATE INDEX runs_parent ON runs(parent_id)",
        "CREATE INDEX runs_updated ON runs(updated)",
        "CREATE INDEX runs_id_prefix ON runs(id text_pattern_ops)",  # run ids by prefix, in any locale
        """CREATE TABLE params (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            num DOUBLE PRECISION,
            kind TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        )""",
        "CREATE INDEX params_key_num ON params(key, num)",
        """CREATE TABLE tags (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        )""",
        "CREATE INDEX tags_key_value ON tags(key, value)",
        """CREATE TABLE notes (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            time DOUBLE PRECISION NOT NULL,
            author TEXT,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX notes_run ON notes(run_id, time)",
        """CREATE TABLE context (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, writer)
        )""",
        """CREATE TABLE metric_series (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            count BIGINT NOT NULL,
            nonfinite BIGINT NOT NULL DEFAULT 0,
            min DOUBLE PRECISION,
            max DOUBLE PRECISION,
            first_step BIGINT,
            last_step BIGINT,
            last_value DOUBLE PRECISION,
            first_time DOUBLE PRECISION,
            last_time DOUBLE PRECISION,
            PRIMARY KEY (run_id, name)
        )""",
        "CREATE INDEX metric_series_name_last ON metric_series(name, last_value)",
        """CREATE TABLE metric_chunks (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            writer TEXT NOT NULL,
            attempt BIGINT NOT NULL,
            n BIGINT NOT NULL,
            first_step BIGINT NOT NULL,
            last_step BIGINT NOT NULL,
            steps BYTEA NOT NULL,
            times BYTEA NOT NULL,
            vals BYTEA NOT NULL
        )""",
        "CREATE INDEX metric_chunks_run_name ON metric_chunks(run_id, name, first_step)",
        """CREATE TABLE log_chunks (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            n BIGINT NOT NULL,
            first_time DOUBLE PRECISION NOT NULL,
            last_time DOUBLE PRECISION NOT NULL,
            max_level BIGINT NOT NULL,
            attempts TEXT NOT NULL,
            data BYTEA NOT NULL
        )""",
        "CREATE INDEX log_chunks_run_time ON log_chunks(run_id, first_time)",
        "CREATE INDEX log_chunks_run_id ON log_chunks(run_id, id)",
        """CREATE TABLE spans (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            start DOUBLE PRECISION NOT NULL,
            "end" DOUBLE PRECISION NOT NULL,
            attempt BIGINT NOT NULL,
            writer TEXT NOT NULL,
            sampled BIGINT NOT NULL DEFAULT 0,
            attrs TEXT
        )""",
        "CREATE INDEX spans_run ON spans(run_id, start)",
        """CREATE TABLE stage_stats (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            writer TEXT NOT NULL,
            count BIGINT NOT NULL,
            total DOUBLE PRECISION NOT NULL,
            min DOUBLE PRECISION NOT NULL,
            max DOUBLE PRECISION NOT NULL,
            first_start DOUBLE PRECISION,
            last_end DOUBLE PRECISION,
            hist TEXT NOT NULL,
            PRIMARY KEY (run_id, name, writer)
        )""",
        """CREATE TABLE resource_samples (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            time DOUBLE PRECISION NOT NULL,
            data TEXT NOT NULL
        )""",
        "CREATE INDEX resource_samples_run ON resource_samples(run_id, time)",
        """CREATE TABLE artifacts (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            role TEXT NOT NULL,
            kind TEXT,
            path TEXT NOT NULL,
            source TEXT,
            size BIGINT,
            sha256 TEXT,
            uri TEXT,
            step BIGINT,
            time DOUBLE PRECISION NOT NULL,
            attempt BIGINT NOT NULL,
            meta TEXT
        )""",
        "CREATE INDEX artifacts_run ON artifacts(run_id)",
        "CREATE INDEX artifacts_sha ON artifacts(sha256)",
        """CREATE TABLE counters (
            run_id TEXT NOT NULL,
            name TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_id, name)
        )""",
        """CREATE TABLE evidence (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            time DOUBLE PRECISION NOT NULL,
            data TEXT NOT NULL
        )""",
        "CREATE INDEX evidence_run_kind ON evidence(run_id, kind)",
        """CREATE TABLE ingested (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            last_seq BIGINT NOT NULL,
            updated DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run_id, writer)
        )""",
    ],
    # 2: API tokens of the server; only a SHA-256 of each secret is kept.
    [
        """CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            hash TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL,
            project TEXT,
            name TEXT,
            created DOUBLE PRECISION NOT NULL,
            last_used DOUBLE PRECISION,
            revoked DOUBLE PRECISION
        )""",
    ],
    # 3: alerts: episodes (one open per identity), their events, silences.
    [
        """CREATE TABLE alerts (
            id TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            rule TEXT NOT NULL,
            kind TEXT NOT NULL,
            severity TEXT NOT NULL,
            labels TEXT NOT NULL,
            run_id TEXT,
            project TEXT,
            state TEXT NOT NULL,
            value DOUBLE PRECISION,
            summary TEXT NOT NULL DEFAULT '',
            evidence TEXT,
            active_since DOUBLE PRECISION,
            fired_at DOUBLE PRECISION,
            resolved_at DOUBLE PRECISION,
            resolved_reason TEXT,
            notified_at DOUBLE PRECISION,
            resolved_notified_at DOUBLE PRECISION,
            silenced_by TEXT,
            updated DOUBLE PRECISION NOT NULL
        )""",
        "CREATE UNIQUE INDEX alerts_open ON alerts(fingerprint) WHERE state IN ('pending', 'firing')",
        "CREATE INDEX alerts_fingerprint ON alerts(fingerprint)",
        "CREATE INDEX alerts_run ON alerts(run_id, updated)",
        "CREATE INDEX alerts_state ON alerts(state, updated)",
        """CREATE TABLE alert_events (
            id BIGSERIAL PRIMARY KEY,
            alert_id TEXT NOT NULL,
            time DOUBLE PRECISION NOT NULL,
            event TEXT NOT NULL,
            detail TEXT
        )""",
        "CREATE INDEX alert_events_alert ON alert_events(alert_id, time)",
        """CREATE TABLE alert_silences (
            id TEXT PRIMARY KEY,
            rule TEXT NOT NULL,
            matchers TEXT NOT NULL,
            starts DOUBLE PRECISION NOT NULL,
            ends DOUBLE PRECISION NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            author TEXT,
            comment TEXT
        )""",
        "CREATE INDEX alert_silences_ends ON alert_silences(ends)",
    ],
    # 4: the server's security bookkeeping: which projects hold which blobs; web UI sessions.
    [
        """CREATE TABLE blob_projects (
            sha256 TEXT NOT NULL,
            project TEXT NOT NULL,
            PRIMARY KEY (sha256, project)
        )""",
        """CREATE TABLE sessions (
            hash TEXT PRIMARY KEY,
            token_id TEXT NOT NULL,
            created DOUBLE PRECISION NOT NULL,
            expires DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX sessions_token ON sessions(token_id)",
    ],
    # 5: the writers of a run: identity, rank, heartbeat, last step, end, first error (issue 28).
    [
        """CREATE TABLE run_writers (
            run_id TEXT NOT NULL,
            writer TEXT NOT NULL,
            host TEXT,
            pid BIGINT,
            pstart DOUBLE PRECISION,
            boot DOUBLE PRECISION,
            owner BIGINT NOT NULL DEFAULT 0,
            forked BIGINT NOT NULL DEFAULT 0,
            peer BIGINT NOT NULL DEFAULT 0,
            attempt BIGINT NOT NULL DEFAULT 1,
            rank BIGINT,
            local_rank BIGINT,
            world_size BIGINT,
            node_rank BIGINT,
            local_world_size BIGINT,
            restart BIGINT NOT NULL DEFAULT 0,
            launcher TEXT,
            job_key TEXT,
            started DOUBLE PRECISION NOT NULL,
            heartbeat DOUBLE PRECISION,
            received DOUBLE PRECISION,
            last_step BIGINT,
            last_step_time DOUBLE PRECISION,
            ended DOUBLE PRECISION,
            status TEXT,
            end_reason TEXT,
            exit_code BIGINT,
            signal BIGINT,
            failure TEXT,
            first_error TEXT,
            first_error_time DOUBLE PRECISION,
            PRIMARY KEY (run_id, writer)
        )""",
        "CREATE INDEX run_writers_rank ON run_writers(run_id, rank)",
        # the rank whose value `last_value` is, when ranks tie at the last step: the lowest wins
        "ALTER TABLE metric_series ADD COLUMN last_rank BIGINT",
    ],
    # 6: the transaction that wrote each appended row (issue 32), and the runs' default order. Ingest holds no lock across
    # runs, so rows of different runs commit in any order of their ids; the alert feed reads
    # the rows of transactions that ended between two reads instead (dialect.py). Rows from
    # before this migration have none: they count as written before everything. BRIN: the
    # column only grows, and such an index costs next to nothing per insert.
    [
        *(
            statement
            for table in ("metric_chunks", "log_chunks", "resource_samples")
            for statement in (
                f"ALTER TABLE {table} ADD COLUMN xid BIGINT",
                f"ALTER TABLE {table} ALTER COLUMN xid SET DEFAULT (pg_current_xact_id()::text::bigint)",
                f"CREATE INDEX {table}_xid ON {table} USING brin (xid)",
            )
        ),
        # the runs page's default order (newest first, missing times last): an index scan, no sort
        "CREATE INDEX runs_project_created_desc ON runs(project, created DESC NULLS LAST, id DESC)",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)
