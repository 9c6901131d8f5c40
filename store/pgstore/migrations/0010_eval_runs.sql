-- 0010_eval_runs: evaluation results (store.EvalRunStore). One row per
-- evaluation, written once when every case has been scored; record is the
-- EvalRun message (protobuf). create_nanos orders an app's evaluations,
-- newest first, for ListEvalRuns.
CREATE TABLE eval_runs (
    app_name     text COLLATE "C" NOT NULL,
    user_id      text COLLATE "C" NOT NULL,
    eval_run_id  text COLLATE "C" NOT NULL,
    create_nanos bigint NOT NULL,
    record       bytea NOT NULL,
    PRIMARY KEY (app_name, user_id, eval_run_id)
);
CREATE INDEX eval_runs_by_time ON eval_runs (app_name, create_nanos DESC, eval_run_id DESC);
