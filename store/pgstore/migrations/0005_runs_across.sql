-- 0005_runs_across: ListRunsOf lists runs across sessions, newest first
-- (create_nanos, run_id), from an index of each app's and each user's
-- runs, and of their active runs apart (status PENDING 1, RUNNING 2,
-- INPUT_REQUIRED 3: partial indexes), so that the runs board reads only
-- active runs however many have ended. status is the record's status,
-- written with it; rows written before this migration have none (NULL)
-- until the store fills it in from their records (backfillRunStatus).
ALTER TABLE runs ADD COLUMN status integer;

CREATE INDEX runs_by_user ON runs (app_name, user_id, create_nanos, run_id);
CREATE INDEX runs_by_app ON runs (app_name, create_nanos, run_id);
CREATE INDEX runs_active_by_user ON runs (app_name, user_id, create_nanos, run_id) WHERE status IN (1, 2, 3);
CREATE INDEX runs_active_by_app ON runs (app_name, create_nanos, run_id) WHERE status IN (1, 2, 3);
CREATE INDEX runs_status_unknown ON runs (run_id) WHERE status IS NULL;
