// Package boltstore is the embedded store of agentrunner: sessions, events,
// scoped state, versioned artifacts and run records in one bbolt file.
//
// # Layout
//
// A few flat buckets with order-preserving tuple keys (see keys.go). Values
// are protobuf-encoded agentrunner.v1 messages.
//
//	meta            "schema_version"                          -> uvarint (currentSchema)
//	sessions        T(app, user, session)                     -> Session: session-scoped state, times, last_sequence
//	events          T(app, user, session) U(seq)              -> Event; seq = 1, 2, 3, ... per session
//	                T(app, user, session) U(anchor) N(create) T(run_id)
//	                                                          -> empty: a run key, the session's list of runs (after event anchor)
//	app_state       T(app)                                    -> Struct of "app:" keys
//	user_state      T(app, user)                              -> Struct of "user:" keys
//	artifacts       T(app, user, session|"", name) R(ver)     -> ArtifactVersion; session "" holds "user:" names
//	blobs           same key as artifacts                     -> Part (the content as saved)
//	tool_calls      T(app, user, session, call_id)            -> ToolCall: the session's tool-call ledger
//	run_records     'r' T(run_id)                             -> uvarint(len) run key, Run; a run keeps the key of its first write
//	                'i' T(app, user) N(create) T(run_id)      -> empty: every run of the user, by creation (the run index)
//	                'v' T(app, user) N(create) T(run_id)      -> empty, while the run is PENDING, RUNNING or INPUT_REQUIRED
//	run_requests    T(app, user, session, request_id)         -> run key: request ids are unique per session
//	memory_sessions T(app, user, session)                     -> uvarints: in memory; the last sequence with postings,
//	                                                             the merges holding its postings
//	memory_postings T(app, user, term) U(^merge)              -> (U(^time) T(session) U(seq) uvarint(count))...: a segment
//	memory_users    T(app, user)                              -> uvarint: the user's events with postings
//	spend           T(app, user|"", day, model)               -> Spend: the daily ledger; user "" holds the app's totals
//
// T(...) encodes strings so that byte order is tuple order and a tuple's
// encoding is a prefix of every longer tuple that starts with it; U is a
// big-endian uint64 and R(v) is U(^v), so the newest version sorts first.
// N(t) is U of t in Unix nanoseconds with the sign bit flipped, so that
// byte order is time order before 1970 too.
//
// # Costs
//
// An append writes the event and the session record (plus the app or user
// state record when the delta touches them): the same few keys whether the
// session holds ten events or a million. Recent-N is a reverse cursor walk
// from the end of the session's event range, after-sequence a forward walk
// from a seek, and listings seek to a cursor kept in the page token.
// A commit that only appends to the end of the events bucket (a lone
// session's) splits its pages at 95% full rather than bbolt's half
// (appendFill): such a session's events take about half the pages, and
// its commits write a level less of the tree sooner.
//
// An append with a run record (AppendRunEvent) writes the record and its
// index entries in the event's transaction: a few more keys, no extra
// commit. The run key's anchor is its session's last sequence when the
// record was first written, so it lands on the page the event goes to.
// Run ids start with their creation time, so the records a commit
// writes, first or final, are those of recent runs and share the last
// pages of run_records; a final record queued by PutRunLater rides along
// with the next commit, whatever it writes. Kept among the events instead (schemas 4 and 5), a final record dirtied a
// page of its session's events of its own, in a commit that wrote none of
// them. Runs are listed newest first by a reverse walk of the session's
// key range that steps over its events; GetRun is one lookup; recovery
// reads only the records of active runs (the 'v' entries below), never
// every record: a run's writes keep no mark of their own for it (schemas
// 6 to 9 kept one, 'u' T(run_id), whose leaf each start and end
// dirtied). Runs across sessions are listed from the run index in
// run_records (runindex.go): a run's 'i' entry, which files of an
// earlier build may hold, is no longer written; its 'v' entry comes and goes
// with the records that change its status, so the runs board's listing of
// active runs reads only active runs. DeleteSession removes a
// session's runs and their index entries with the rest. An append that changes no
// session state rewrites two fields of the session record's encoding
// instead of decoding and re-encoding it.
//
// An append of an event with usage (a model call) adds it to two keys of
// the spend ledger (spend.go) in its transaction, its user's and the
// app's of the event's UTC day and model, and its cost to the session
// record's beside its usage; an event without usage opens no bucket for
// it. A listing of spend is a range scan of one user's (or the app's)
// days.
//
// Memory (memory.go) is an inverted index per app and user over the
// sessions added to it (IndexSession). An append writes nothing for it
// (a session in memory costs the append one lookup): a merger writes the
// postings of the events past each session's watermark about once a
// second, in batches, in commits of its own. A search seeks to the
// postings of its terms, reads the events of the user's sessions not
// merged yet and the page's events, never a session's history.
// DeleteSession removes the session's postings.
//
// # Writes
//
// Every write goes through one committer goroutine that takes all writes
// waiting at that moment and commits them in a single transaction, so
// concurrent sessions share fsyncs (group commit) while a lone writer pays
// exactly one commit and no timer. A write is acknowledged only after its
// transaction is committed and synced.
//
// PutRunLater is the exception: it queues a run record (a run's final
// status) and returns at once. The committer writes the queued records
// with the next commit, whatever it writes (records share the last pages
// of run_records), at the start of that transaction, so that a later
// synchronous write of the same run wins; when no write comes within
// 20 ms, a timer commits them alone, and Close writes the queue before
// closing. Reads overlay the queue until the file shows it, and a record
// of a session deleted meanwhile is dropped.
package boltstore
