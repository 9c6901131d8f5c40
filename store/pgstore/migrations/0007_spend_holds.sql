-- 0007_spend_holds: what model calls in flight hold against an app's
-- daily budgets (store.SpendHolder), one row per call, deleted when the
-- call's event is stored (its usage is in spend then) or ignored once
-- expires_at has passed (its replica died). A hold and a release take
-- the app's transaction-scoped advisory lock first, so that the check of
-- spend plus holds against a limit and the hold are one step across
-- replicas.
CREATE TABLE spend_holds (
    app_name   text COLLATE "C" NOT NULL,
    hold_id    text COLLATE "C" NOT NULL,
    user_id    text COLLATE "C" NOT NULL,
    day        date NOT NULL,
    tokens     bigint NOT NULL CHECK (tokens >= 0),
    micros     bigint NOT NULL CHECK (micros >= 0),
    uncapped   boolean NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (app_name, hold_id)
);
CREATE INDEX spend_holds_day ON spend_holds (app_name, day);
