-- 0008_webhook_outbox: the webhook outbox (store.WebhookOutbox). A run
-- write that calls back (store.QueuesDelivery) inserts its delivery in
-- its own transaction. Replicas claim due deliveries with FOR UPDATE SKIP
-- LOCKED and a lease (lease_until, claim): two replicas never hold one at
-- once, and one whose claimer died is claimed again once its lease ends.
-- record is the WebhookDelivery; the columns beside it are what claims
-- select on, and win over the record's copies of them.
CREATE TABLE webhook_outbox (
    delivery_id  text COLLATE "C" NOT NULL PRIMARY KEY,
    state        integer NOT NULL,           -- WebhookDeliveryState: 1 pending, 2 failed
    next_attempt timestamptz NOT NULL,
    lease_until  timestamptz NOT NULL DEFAULT '-infinity',
    claim        bigint NOT NULL DEFAULT 0,
    create_time  timestamptz NOT NULL,
    record       bytea NOT NULL              -- WebhookDelivery
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt) WHERE state = 1;
CREATE INDEX webhook_outbox_failed ON webhook_outbox (create_time) WHERE state = 2;
