// Package pgstore is the PostgreSQL store of agentrunner: sessions,
// events, scoped state, versioned artifacts, the tool-call ledger and run
// records in one database, for deployments that outgrow the embedded
// bbolt file (store/boltstore) or run several replicas on one database.
// It passes the same conformance suite (store/storetest) and returns the
// same sentinel errors (package store).
//
// It owns its schema: the SQL files of migrations/ are embedded in the
// binary and applied by Open (or Migrate) in order, under a PostgreSQL
// advisory lock so that replicas starting together apply each once; the
// table schema_migrations records what is applied. A database migrated
// by a newer binary is refused.
//
// Like every package under store/, it must not import runner, server,
// cmd or examples: storage never depends on the runner
// (runner/deps_test.go checks it).
//
// # Layout
//
// Messages are stored as their protobuf encoding (bytea), beside the
// columns that are indexed or filtered on (see migrations/0001_init.sql):
//
//	sessions    (app, user, session)                    -> Session, last_sequence
//	app_state   (app)                                   -> Struct of "app:" keys
//	user_state  (app, user)                             -> Struct of "user:" keys
//	events      (app, user, session, sequence)          -> Event
//	tool_calls  (app, user, session, call_id)           -> ToolCall
//	artifacts   (app, user, session|'', name, version)  -> ArtifactVersion, Part
//	runs        (run_id); (app, user, session, anchor, create_nanos, run_id)
//	            -> Run, request_id (unique per session), unfinished
//	sessions    lease_holder, lease_token, lease_expires: the session lease
//	run_queue   (run_id); (app, user, session, position, run_id)
//	            -> queued runs, taken in position order (queue.go)
//	memory_sessions (app, user, session)                -> indexed: its events with postings
//	memory_postings (app, user, session, sequence, term) -> tf, event_nanos;
//	                by (app, user, term): long-term memory (memory.go)
//	spend       (app, user|'', day, model, shard)       -> token, cost and call sums: the daily
//	            ledger (spend.go); user '' holds the app's totals, shard
//	            splits each over its sessions' hashes, and reads sum them
//
// # Writes
//
// An append is one transaction that locks the session's row (SELECT …
// FOR UPDATE), so that the appends of a session are serialized, across
// processes too, and the next sequence is the row's last_sequence plus
// one; it then writes the event, the ledger entries it changes, the run
// record it carries (AppendRunEvent), the event's memory postings when
// the session is in memory, the session row and, for an event with usage,
// the two rows of the spend ledger it adds to (last: other sessions'
// appends wait on them until the commit, only those whose session shares
// the shard). It is
// pipelined (pipeline.go): BEGIN goes with every read the append needs,
// and its writes with COMMIT, two round trips in all. The pipelined
// writes of sessions waiting at the same time share that transaction
// (batch.go): their rows locked in key order, their events and session
// records written as arrays, the ledger's rows summed, one WAL flush for
// all; a write that fails on its own fails alone, and a batch the
// database refuses is retried write by write. An append that
// changes "app:" or "user:" state runs statement by statement instead,
// locking the shared rows after the session's (always in the order
// session, app, user, so that appends never deadlock). Appends to
// different sessions run in parallel and share the server's WAL flushes
// (the pool has DefaultMaxConns connections unless the URL says
// otherwise).
//
// An append whose context carries a session lease (store.WithLease)
// checks the lease's fencing token under the row lock: a writer whose
// lease another took (AcquireLease) is refused with store.ErrFenced.
//
// PutRunLater writes its record at once in a transaction with
// synchronous_commit off: it waits for no WAL flush of its own, reads
// see it at once, later writes of the run win, and a crash of the
// database may lose it, as the contract allows.
//
// # Across replicas
//
// The store is a store.RunQueue (queue.go): a run that waits for its
// session is a row of run_queue, taken (FOR UPDATE SKIP LOCKED, under
// the session's row lock) and deleted in the transaction that gives the
// session's lease to it. It is a store.RunNotifier (notify.go): every write of a
// run's event or record sends a notification once it has committed: the
// pipelined appends and records send theirs right after the COMMIT, in
// the same round trip (inside the transaction, PostgreSQL would serialize
// the commits of notifying transactions through their WAL flushes), the
// rarer writes send pg_notify in their own transaction. One
// connection per store, outside the pool, LISTENs and fans notices out to
// the subscribers, reconnecting when it is lost. It is opened by the first
// Subscribe and closed by Close.
package pgstore
