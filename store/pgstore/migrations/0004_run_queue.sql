-- 0004_run_queue: runs that wait for their session, in the database, so
-- that any replica that frees the session runs them (in order) and they
-- outlive the replica that queued them. A taker locks its session's row,
-- then takes the first row of the session's queue FOR UPDATE SKIP LOCKED
-- and deletes it in the transaction that takes the session's lease.
-- position orders a session's queue: a sequence's next value, or one less
-- than the session's first position for a run that goes first
-- (MULTITASK_STRATEGY_INTERRUPT).
CREATE SEQUENCE run_queue_position;

CREATE TABLE run_queue (
    run_id     text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES runs ON DELETE CASCADE,
    app_name   text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    position   bigint NOT NULL
);

CREATE INDEX run_queue_by_session ON run_queue (app_name, user_id, session_id, position, run_id);
