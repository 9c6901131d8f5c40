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
//
// # Writes
//
// An append is one transaction: it locks the session's row (SELECT …
// FOR UPDATE), so that the appends of a session are serialized and the
// next sequence is the row's last_sequence plus one, then writes the
// event, the ledger entries, the shared state rows it changes (locked in
// the order session, app, user, so that appends never deadlock) and the
// session row. Appends to different sessions run in parallel and share
// the server's WAL flushes.
//
// PutRunLater writes its record at once in a transaction with
// synchronous_commit off: it waits for no WAL flush of its own, reads
// see it at once, later writes of the run win, and a crash of the
// database may lose it, as the contract allows.
package pgstore
