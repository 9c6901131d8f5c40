// Package replica is how the runs of one app share their store: alone, on
// a store one process owns (bbolt), or with other replicas, on a store
// that several share and that leases sessions, queues runs and notifies
// (store.SessionLeaser, store.RunQueue, store.RunNotifier: pgstore).
//
// The runner chooses the Mode once, at New, from what its store can do
// (New): a store of one process gets a mode that does nothing and costs
// nothing; nothing outside this package asks whether a store leases or
// queues. With replicas:
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
//     replica's runs are left alone.
//
// The runner is its Host: the registry of live runs, their launch and
// their cancellation stay the runner's. It must not import the runner,
// the turn or the server (runner/deps_test.go checks).
package replica
