-- 0001_init: sessions, events, scoped state, artifacts, the tool-call
-- ledger and run records. Every key column is COLLATE "C" so that
-- listings are in byte order, as in the bbolt store, whatever the
-- database's locale. Messages are stored as their protobuf encoding
-- (bytea); columns beside them hold what is indexed or filtered on.

CREATE TABLE sessions (
    app_name      text COLLATE "C" NOT NULL,
    user_id       text COLLATE "C" NOT NULL,
    session_id    text COLLATE "C" NOT NULL,
    -- The Session message: its own state, times, last_sequence,
    -- compacted_sequence and usage. last_sequence is repeated here for
    -- the run records' anchor and for checks by hand.
    record        bytea NOT NULL,
    last_sequence bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (app_name, user_id, session_id)
);

-- "app:" keys, shared by every session of an app.
CREATE TABLE app_state (
    app_name text COLLATE "C" NOT NULL PRIMARY KEY,
    state    bytea NOT NULL -- google.protobuf.Struct
);

-- "user:" keys, shared by every session of a user.
CREATE TABLE user_state (
    app_name text COLLATE "C" NOT NULL,
    user_id  text COLLATE "C" NOT NULL,
    state    bytea NOT NULL, -- google.protobuf.Struct
    PRIMARY KEY (app_name, user_id)
);

-- Events, numbered 1, 2, 3, ... per session by the append transaction,
-- which holds the session's row lock. The primary key serves recent-N
-- (a backward scan), after-sequence and paged listings.
CREATE TABLE events (
    app_name   text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    sequence   bigint NOT NULL,
    -- AppendEventOnce looks ids up among one session's events by a scan
    -- of its key range (no index of their own: the runner's appends do
    -- not pay for one).
    event_id   text COLLATE "C" NOT NULL,
    event_time timestamptz NOT NULL,
    record     bytea NOT NULL, -- Event, sequence included
    PRIMARY KEY (app_name, user_id, session_id, sequence),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- The tool-call ledger, kept by the append transaction.
CREATE TABLE tool_calls (
    app_name      text COLLATE "C" NOT NULL,
    user_id       text COLLATE "C" NOT NULL,
    session_id    text COLLATE "C" NOT NULL,
    call_id       text COLLATE "C" NOT NULL,
    call_sequence bigint NOT NULL,
    record        bytea NOT NULL, -- ToolCall
    PRIMARY KEY (app_name, user_id, session_id, call_id),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- Artifact versions. scope is the session id, or '' for "user:" names,
-- which every session of the user shares (so no foreign key: a user's
-- artifacts outlive any one session).
CREATE TABLE artifacts (
    app_name text COLLATE "C" NOT NULL,
    user_id  text COLLATE "C" NOT NULL,
    scope    text COLLATE "C" NOT NULL,
    filename text COLLATE "C" NOT NULL,
    version  bigint NOT NULL,
    meta     bytea NOT NULL, -- ArtifactVersion
    part     bytea NOT NULL, -- Part, the content as saved
    PRIMARY KEY (app_name, user_id, scope, filename, version)
);

-- Run records. A run id is one run in the whole store. anchor is the
-- session's last sequence when the record was first written: runs are
-- listed newest first by (anchor, create_nanos, run_id), as in the bbolt
-- store. request_id is NULL when empty; the unique constraint makes it
-- unique within the session.
CREATE TABLE runs (
    run_id       text COLLATE "C" NOT NULL PRIMARY KEY,
    app_name     text COLLATE "C" NOT NULL,
    user_id      text COLLATE "C" NOT NULL,
    session_id   text COLLATE "C" NOT NULL,
    anchor       bigint NOT NULL,
    create_nanos bigint NOT NULL,
    request_id   text COLLATE "C",
    unfinished   boolean NOT NULL, -- status PENDING or RUNNING
    record       bytea NOT NULL,   -- Run
    UNIQUE (app_name, user_id, session_id, request_id),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- ListRuns: a backward scan of one session's range.
CREATE INDEX runs_by_session ON runs (app_name, user_id, session_id, anchor, create_nanos, run_id);

-- ListUnfinishedRuns reads only the runs a restart must recover.
CREATE INDEX runs_unfinished ON runs (create_nanos) WHERE unfinished;
