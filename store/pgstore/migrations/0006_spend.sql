-- 0006_spend: the daily spend ledger (store.SpendStore). The append of an
-- event with usage (a model call) adds it, in the event's transaction, to
-- two rows of its UTC day and model: its user's and the app's, whose
-- user_id is '' (no session's user can be empty). Rows are added to with
-- INSERT ... ON CONFLICT DO UPDATE SET x = spend.x + EXCLUDED.x, so that
-- replicas appending at once add up exactly; the user's row is always
-- locked before the app's, so that two appends never wait on each other
-- in opposite order. A row's lock is held until the commit's WAL flush,
-- so one row per (app, day, model) would let the app's model calls commit
-- one flush at a time: each total is split over shards instead, the
-- session's (a hash of its id), whose rows the session's own appends,
-- serialized by its row lock anyway, are the main writers of; reads sum
-- the shards. The user comes before the day in the key: a user's (or
-- the app's) listing over a range of days is one range of the index.
-- DeleteSession leaves the rows alone: what was spent stays spent. What
-- was spent before this migration is not known by day: the ledger starts
-- empty.
CREATE TABLE spend (
    app_name               text COLLATE "C" NOT NULL,
    user_id                text COLLATE "C" NOT NULL,
    day                    date NOT NULL,
    model                  text COLLATE "C" NOT NULL,
    -- UsageMetadata's counts, summed.
    prompt_tokens          bigint NOT NULL DEFAULT 0,
    candidates_tokens      bigint NOT NULL DEFAULT 0,
    thoughts_tokens        bigint NOT NULL DEFAULT 0,
    cached_content_tokens  bigint NOT NULL DEFAULT 0,
    tool_use_prompt_tokens bigint NOT NULL DEFAULT 0,
    total_tokens           bigint NOT NULL DEFAULT 0,
    cache_creation_tokens  bigint NOT NULL DEFAULT 0,
    -- Cost's, summed; currency is the first one seen.
    micros                 bigint NOT NULL DEFAULT 0,
    unpriced_calls         bigint NOT NULL DEFAULT 0,
    currency               text NOT NULL DEFAULT '',
    -- The model calls counted (Spend.model_calls).
    calls                  bigint NOT NULL DEFAULT 0,
    shard                  smallint NOT NULL,
    PRIMARY KEY (app_name, user_id, day, model, shard)
);
