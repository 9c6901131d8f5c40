-- 0008_reserved: a placeholder on the schedules branch, which took 0009
-- while the webhooks branch adds its own 0008 (migrations are numbered
-- without gaps). Delete this file when that branch's 0008 is merged.
SELECT 1;
