"""The run database's schema, as an ordered list of migrations.

A database records the number of migrations applied in ``PRAGMA user_version``; opening
it applies the rest, each in its own transaction. Never edit a migration that has
shipped: add a new one.
"""

from __future__ import annotations

# The records a node's run copies to the driver, each with the columns its by-node index
# orders by after the node (migration 6).
_NODE_RECORDS = (
    ("isolation_rows", "node, window"),
    ("canary_samples", "node, window, at"),
    ("console_samples", "node, window, at"),
    ("verifier_results", "node, rollout_id"),
    ("control_results", "node"),
    ("latency_samples", "node, test"),
    ("leaky_controls", "node"),
)


def _copied_from_nodes(table: str) -> str:
    """Migration 6's columns for ``table``: the node a record came from, and the id it had
    in the node's own database, unique per node, so a record copied twice is kept once."""
    return f"""    ALTER TABLE {table} ADD COLUMN node TEXT NOT NULL DEFAULT '';
    ALTER TABLE {table} ADD COLUMN source_id INTEGER;
    CREATE UNIQUE INDEX {table}_from_nodes ON {table} (node, source_id)
        WHERE source_id IS NOT NULL;
"""


MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema.
    """
    CREATE TABLE runs (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        created_at  REAL NOT NULL,
        ended_at    REAL,
        status      TEXT NOT NULL DEFAULT 'running',
        host        TEXT NOT NULL,
        meta        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE environments (
        name        TEXT PRIMARY KEY,
        unix_user   TEXT,
        display     TEXT,
        generation  INTEGER NOT NULL DEFAULT 0,
        created_at  REAL NOT NULL,
        meta        TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE windows (
        idx         INTEGER PRIMARY KEY,
        started_at  REAL NOT NULL,
        ended_at    REAL,
        status      TEXT NOT NULL DEFAULT 'open'
    );
    CREATE TABLE rollouts (
        rollout_id  TEXT PRIMARY KEY,
        env         TEXT NOT NULL,
        window      INTEGER NOT NULL,
        token       TEXT NOT NULL UNIQUE,
        task        TEXT NOT NULL,
        started_at  REAL NOT NULL,
        ended_at    REAL,
        outcome     TEXT CHECK (outcome IN ('success', 'failure', 'invalid')),
        reason      TEXT,
        score       REAL,
        detail      TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX rollouts_by_window ON rollouts (window, ended_at);
    CREATE TABLE isolation_rows (
        id          INTEGER PRIMARY KEY,
        window      INTEGER NOT NULL,
        test        TEXT NOT NULL,
        trial       INTEGER NOT NULL,
        from_env    TEXT NOT NULL,
        to_env      TEXT NOT NULL,
        result      TEXT NOT NULL CHECK (result IN ('clean', 'cross', 'lost')),
        detail      TEXT NOT NULL DEFAULT '',
        at          REAL NOT NULL
    );
    CREATE INDEX isolation_by_window ON isolation_rows (window, result);
    CREATE TABLE canary_samples (
        id          INTEGER PRIMARY KEY,
        window      INTEGER,
        at          REAL NOT NULL,
        ok          INTEGER NOT NULL,
        focused_text_sha256 TEXT,
        window_list_sha256  TEXT,
        clipboard_sha256    TEXT,
        detail      TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX canary_by_window ON canary_samples (window, at);
    CREATE TABLE verifier_results (
        id          INTEGER PRIMARY KEY,
        rollout_id  TEXT,
        verifier    TEXT NOT NULL,
        outcome     TEXT NOT NULL CHECK (outcome IN ('success', 'failure', 'invalid')),
        reason      TEXT,
        score       REAL,
        details     TEXT NOT NULL DEFAULT '{}',
        at          REAL NOT NULL
    );
    CREATE INDEX verifier_by_rollout ON verifier_results (rollout_id);
    CREATE TABLE control_results (
        id               INTEGER PRIMARY KEY,
        at               REAL NOT NULL,
        typing_cross     INTEGER NOT NULL,
        typing_trials    INTEGER NOT NULL,
        clipboard_cross  INTEGER NOT NULL,
        clipboard_trials INTEGER NOT NULL,
        fired            INTEGER NOT NULL,
        not_claimed      TEXT NOT NULL,
        detail           TEXT NOT NULL DEFAULT ''
    );
    """,
    # 2: which environments' tokens a canary sample showed, so a change can be attributed.
    """
    ALTER TABLE canary_samples ADD COLUMN sources TEXT NOT NULL DEFAULT ''
    """,
    # 3: bystander latency samples, and which leaky setups made which tests fire.
    """
    CREATE TABLE latency_samples (
        id      INTEGER PRIMARY KEY,
        window  INTEGER,
        test    TEXT NOT NULL,
        env     TEXT NOT NULL,
        phase   TEXT NOT NULL DEFAULT '',
        at      REAL NOT NULL,
        ms      REAL NOT NULL
    );
    CREATE INDEX latency_by_test ON latency_samples (test, env);
    CREATE TABLE leaky_controls (
        id      INTEGER PRIMARY KEY,
        test    TEXT NOT NULL,
        leak    TEXT NOT NULL,
        fired   INTEGER NOT NULL,
        rows    INTEGER NOT NULL,
        cross   INTEGER NOT NULL,
        detail  TEXT NOT NULL DEFAULT '',
        at      REAL NOT NULL
    );
    """,
    # 4: every clipboard trial's set skew in the positive control (only those within
    # 100 ms count toward its gate).
    """
    ALTER TABLE control_results ADD COLUMN clipboard_skew_ms TEXT NOT NULL DEFAULT '[]'
    """,
    # 5: the parked console's samples (a second canary in env00), and whether each watch
    # was active in the run, with why not.
    """
    CREATE TABLE console_samples (
        id           INTEGER PRIMARY KEY,
        window       INTEGER,
        at           REAL NOT NULL,
        ok           INTEGER NOT NULL,
        pane_sha256  TEXT,
        history_size INTEGER,
        detail       TEXT NOT NULL DEFAULT '',
        sources      TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX console_by_window ON console_samples (window, at);
    CREATE TABLE watches (
        name    TEXT PRIMARY KEY,
        active  INTEGER NOT NULL,
        detail  TEXT NOT NULL DEFAULT '',
        at      REAL NOT NULL
    );
    """,
    # 6: a run across the nodes of a Ray cluster (`cleanroom.cluster`). Every record names
    # the node it came from ('' on one machine, indexed so that one node's records are
    # found without a scan) and, when the driver copied it from the node's own database,
    # the id it had there, so a copy made twice is kept once. The
    # rollouts, environments and watches are keyed by node; a change to a rollout takes
    # the next number of `change_counter`, so a node can say what changed since a pull.
    """
    CREATE TABLE nodes (
        name        TEXT PRIMARY KEY,
        node_id     TEXT NOT NULL DEFAULT '',
        host        TEXT NOT NULL DEFAULT '',
        envs        INTEGER NOT NULL DEFAULT 0,
        run_dir     TEXT NOT NULL DEFAULT '',
        joined_at   REAL NOT NULL,
        ended_at    REAL,
        status      TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'finished', 'lost', 'failed')),
        detail      TEXT NOT NULL DEFAULT ''
    );
    CREATE TABLE node_windows (
        node        TEXT NOT NULL,
        idx         INTEGER NOT NULL,
        started_at  REAL NOT NULL,
        ended_at    REAL,
        status      TEXT NOT NULL DEFAULT 'open',
        PRIMARY KEY (node, idx)
    );
    CREATE TABLE change_counter (
        id   INTEGER PRIMARY KEY CHECK (id = 1),
        seq  INTEGER NOT NULL
    );
    INSERT INTO change_counter (id, seq) VALUES (1, 0);
    CREATE TABLE rollouts_by_node (
        node        TEXT NOT NULL DEFAULT '',
        rollout_id  TEXT NOT NULL,
        env         TEXT NOT NULL,
        window      INTEGER NOT NULL,
        token       TEXT NOT NULL,
        task        TEXT NOT NULL,
        started_at  REAL NOT NULL,
        ended_at    REAL,
        outcome     TEXT CHECK (outcome IN ('success', 'failure', 'invalid')),
        reason      TEXT,
        score       REAL,
        detail      TEXT NOT NULL DEFAULT '',
        change_seq  INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (node, rollout_id),
        UNIQUE (node, token)
    );
    INSERT INTO rollouts_by_node (rollout_id, env, window, token, task, started_at, ended_at,
        outcome, reason, score, detail)
        SELECT rollout_id, env, window, token, task, started_at, ended_at, outcome, reason,
        score, detail FROM rollouts;
    DROP TABLE rollouts;
    ALTER TABLE rollouts_by_node RENAME TO rollouts;
    CREATE INDEX rollouts_by_window ON rollouts (window, ended_at);
    CREATE INDEX rollouts_by_change ON rollouts (change_seq);
    CREATE TABLE environments_by_node (
        node        TEXT NOT NULL DEFAULT '',
        name        TEXT NOT NULL,
        unix_user   TEXT,
        display     TEXT,
        generation  INTEGER NOT NULL DEFAULT 0,
        created_at  REAL NOT NULL,
        meta        TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (node, name)
    );
    INSERT INTO environments_by_node (name, unix_user, display, generation, created_at, meta)
        SELECT name, unix_user, display, generation, created_at, meta FROM environments;
    DROP TABLE environments;
    ALTER TABLE environments_by_node RENAME TO environments;
    CREATE TABLE watches_by_node (
        node    TEXT NOT NULL DEFAULT '',
        name    TEXT NOT NULL,
        active  INTEGER NOT NULL,
        detail  TEXT NOT NULL DEFAULT '',
        at      REAL NOT NULL,
        PRIMARY KEY (node, name)
    );
    INSERT INTO watches_by_node (name, active, detail, at)
        SELECT name, active, detail, at FROM watches;
    DROP TABLE watches;
    ALTER TABLE watches_by_node RENAME TO watches;
    """
    + "".join(_copied_from_nodes(table) for table, _ in _NODE_RECORDS)
    + "".join(
        f"    CREATE INDEX {table}_by_node ON {table} ({columns});\n"
        for table, columns in _NODE_RECORDS
    ),
)

# An audit's database (`auditdb`), in its own run folder: the same rules, its own count.
AUDIT_MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema.
    """
    CREATE TABLE audit (
        id          INTEGER PRIMARY KEY CHECK (id = 1),
        created_at  REAL NOT NULL,
        ended_at    REAL,
        status      TEXT NOT NULL DEFAULT 'running',
        host        TEXT NOT NULL,
        settings    TEXT NOT NULL
    );
    CREATE TABLE audit_jobs (
        job_id      TEXT PRIMARY KEY,
        kind        TEXT NOT NULL,
        path        TEXT NOT NULL,
        name        TEXT NOT NULL,
        status      TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'interrupted')),
        attempts    INTEGER NOT NULL DEFAULT 0,
        node        TEXT NOT NULL DEFAULT '',
        started_at  REAL,
        ended_at    REAL,
        verdict     TEXT,
        flags       TEXT NOT NULL DEFAULT '[]',
        result      TEXT,
        detail      TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX audit_jobs_by_status ON audit_jobs (status);
    """,
)
