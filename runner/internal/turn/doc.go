// Package turn is one execution of a run: from the session as the last
// writer left it to the run's final record. It plans the execution
// (Prepare: the session loaded, the request checked against it, the
// agent picked, or where a resumed run goes on), runs it (Execute: the
// user's message stored with the record, the agents run and their events
// stored before they are published, transfers followed, the session
// compacted) and ends it (the final record stored before anyone hears of
// it). It also writes the ends that come from outside a run: a run a
// crash cut off (MarkInterrupted), a waiting run CancelRun settles
// (CancelWaiting).
//
// A turn reaches nothing but its Env (the store, the tree, the plugins,
// memory, the history cache, the clock, ids and the log) and its Sink
// (the live run its events and record go to). Admission, the registry of
// runs and the replicas are the runner's: it must not import the runner,
// the replicas or the server (runner/deps_test.go checks).
package turn
