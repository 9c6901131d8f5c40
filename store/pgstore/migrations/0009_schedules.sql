-- 0009_schedules: schedules created through the API (store.ScheduleStore),
-- and for every schedule, the apps file's too, its cursor (every time up
-- to it is decided) and one row per claimed time. A claim locks the
-- schedule's state row, refuses a time at or before its cursor and moves
-- it, in one transaction, so that replicas racing for a time fire it
-- once; the primary key of schedule_fires holds that as well.
CREATE TABLE schedules (
    schedule_id text COLLATE "C" PRIMARY KEY,
    app_name    text COLLATE "C" NOT NULL,
    record      bytea NOT NULL
);
CREATE INDEX schedules_app ON schedules (app_name, schedule_id);

CREATE TABLE schedule_state (
    schedule_id    text COLLATE "C" PRIMARY KEY,
    cursor_ns      bigint NOT NULL,
    last_time_ns   bigint NOT NULL DEFAULT 0
);

CREATE TABLE schedule_fires (
    schedule_id text COLLATE "C" NOT NULL,
    time_ns     bigint NOT NULL,
    holder      text NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished    boolean NOT NULL DEFAULT false,
    run_id      text NOT NULL DEFAULT '',
    error       text NOT NULL DEFAULT '',
    PRIMARY KEY (schedule_id, time_ns)
);
