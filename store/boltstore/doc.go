// Package boltstore is the embedded store of agentrunner: sessions, events,
// scoped state and versioned artifacts in one bbolt file.
//
// # Layout
//
// A few flat buckets with order-preserving tuple keys (see keys.go). Values
// are protobuf-encoded agentrunner.v1 messages.
//
//	meta       "schema_version"                       -> uvarint (currentSchema)
//	sessions   T(app, user, session)                  -> Session: session-scoped state, times, last_sequence
//	events     T(app, user, session) U(seq)           -> Event; seq = 1, 2, 3, ... per session
//	app_state  T(app)                                 -> Struct of "app:" keys
//	user_state T(app, user)                           -> Struct of "user:" keys
//	artifacts  T(app, user, session|"", name) R(ver)  -> ArtifactVersion; session "" holds "user:" names
//	blobs      same key as artifacts                  -> Part (the content as saved)
//
// T(...) encodes strings so that byte order is tuple order and a tuple's
// encoding is a prefix of every longer tuple that starts with it; U is a
// big-endian uint64 and R(v) is U(^v), so the newest version sorts first.
//
// # Costs
//
// An append writes the event and the session record (plus the app or user
// state record when the delta touches them): the same few keys whether the
// session holds ten events or a million. Recent-N is a reverse cursor walk
// from the end of the session's event range, after-sequence a forward walk
// from a seek, and listings seek to a cursor kept in the page token.
//
// # Writes
//
// Every write goes through one committer goroutine that takes all writes
// waiting at that moment and commits them in a single transaction, so
// concurrent sessions share fsyncs (group commit) while a lone writer pays
// exactly one commit and no timer. A write is acknowledged only after its
// transaction is committed and synced.
package boltstore
