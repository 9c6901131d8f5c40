-- 0008_reserved_webhooks: a placeholder for the number another branch owns (issue 48: webhooks 0008,
-- schedules 0009, fork and rewind 0010), so that 0011_eval_runs applies on this
-- branch alone. Drop this file when the branch that owns the number merges.
SELECT 1;
