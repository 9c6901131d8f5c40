// Package runrec holds the rules of a run's record: the statuses a run
// moves through, how each end is written (succeeded, failed, waiting on
// input, cancelled, interrupted, fenced), the google.rpc codes its errors
// carry, the causes a run is stopped with, and what a run waits on. They
// are pure functions on the record and the run's events: every other
// part of the run machinery (the turn, the replicas, the runner's
// admission) writes a record through them, so that each rule and each
// code is written once.
//
// It knows records and events only: it must not import the runner, the
// turn, the replicas, the live runs or the server (runner/deps_test.go
// checks).
package runrec
