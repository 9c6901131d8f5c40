// Package replica is how the runs of one app share their store: alone, on
// a store one process owns (bbolt), or with other replicas, on a store
// that several share and that leases sessions, queues runs and notifies
// (store.SessionLeaser, store.RunQueue, store.RunNotifier: pgstore).
//
// The runner gets a Set of capabilities once, at New, from what its store
// can do, and asks for one where it uses it: Leases (take, carry and give
// up a session's lease), Queue (the replicas' shared queue of runs),
// Elsewhere (follow and cancel a run not live in this process), Recovery
// (what becomes of the unfinished runs Recover finds) and Claims (the
// runner's ClaimGate). A store of one process has no Leases and no Queue,
// and nothing runs in the background for it; nothing outside this package
// asks whether a store leases or queues. With replicas:
//
//   - every execution of a run holds its session's lease, renewed by a
//     heartbeat; a run whose lease another writer took is stopped, and its
//     appends are refused (fenced);
//   - a run that must wait for its session (MULTITASK_STRATEGY_ENQUEUE,
//     _INTERRUPT) waits in the store's queue, not in this process: the
//     replica that frees the session hands its lease to the session's next
//     queued run and runs it, and every replica's sweeper takes queued runs
//     of free sessions when told a run was queued, and at each Recover,
//     as far as its ClaimGate lets it;
//   - a run that does not run here (queued, or running on another replica)
//     is followed through the store: its stored events and its record, read
//     again whenever the store notifies a change. Partial events are not
//     stored, so they reach only readers on the replica that runs the run;
//   - CancelRun of a run that does not run here cancels a queued run in the
//     store, or asks every replica (NotifyCancel) to cancel it, and waits
//     for its stored record to end;
//   - recovery looks only at runs whose session's lease is free: a live
//     replica's runs are left alone; the runner's Recover runs again
//     every Config.RecoverEvery (a lease's lifetime by default), for the
//     pending runs a dead replica took from the queue and the queues
//     nobody took.
//
// The runner is its Host: the registry of live runs, their launch and
// their cancellation stay the runner's. It must not import the runner,
// the turn or the server (runner/deps_test.go checks).
package replica
