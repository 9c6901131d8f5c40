// Package schedule runs apps on a schedule: it parses cron expressions
// in a time zone (cron.go) and fires each schedule's times (scheduler.go),
// each time claimed once in the store (store.ScheduleStore) by whichever
// replica gets there first, so that replicas sharing a store fire it
// exactly once. What a firing does (a run through the front desk's
// admission) is its caller's.
//
// It must not import gRPC, server or the runner's internals: it sees the
// store and the generated messages only.
package schedule
