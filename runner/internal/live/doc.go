// Package live holds what a run produces while it runs in this process,
// and its readers: the run's log of updates (its record, its events and
// in-band errors, in order), the record as it changes, the run's end, and
// the following of that log by any number of readers at their own pace
// (the stream that started the run, attachers, a reader on the run's own
// goroutine), while the run never waits for them. Runs that are not live
// here are replayed from the store.
//
// It knows a run's log and the store's events only: it must not import
// the runner, the turn, the replicas or the server (runner/deps_test.go
// checks). Admission, the registry of runs and their leases are the
// runner's and the replicas'.
package live
