-- 0002_session_leases: one writer per session across replicas. A lease
-- has a holder, an expiry (by the database's clock, the one clock every
-- replica shares) and a fencing token that grows with every acquisition;
-- an append made under a lease checks the token while it holds the
-- session's row lock.
ALTER TABLE sessions
    ADD COLUMN lease_holder  text,
    ADD COLUMN lease_token   bigint NOT NULL DEFAULT 0,
    ADD COLUMN lease_expires timestamptz;
