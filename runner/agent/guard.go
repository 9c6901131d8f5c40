package agent

import (
	"context"
	"iter"
	"log/slog"
	"runtime/debug"
	"strings"
)

// RangeGuarded ranges over seq and hands every element to yield, like a
// for-range loop, and recovers a panic raised by seq itself: it is logged
// with its stack and returned as a *PanicError naming where. A panic raised
// by yield (the consumer's loop body) is not recovered: it is the
// consumer's and goes on up, as the iterator rules require. It reports
// whether yield asked to stop.
//
// Every goroutine and iterator the runner drives on an agent's behalf
// (agent bodies, parallel branches, tool calls, model streams) goes
// through a guard, so that a bug in one agent ends that agent's turn with
// an in-band error instead of the process.
func RangeGuarded[V any](ctx context.Context, log *slog.Logger, where string, seq iter.Seq2[V, error], yield func(V, error) bool) (stopped bool, panicked error) {
	inBody := false
	defer func() {
		if inBody {
			return // not ours: let the consumer's panic unwind
		}
		if p := recover(); p != nil {
			panicked = recovered(ctx, log, where, p)
		}
	}()
	for v, err := range seq {
		inBody = true
		if !yield(v, err) {
			return true, nil
		}
		inBody = false
	}
	return false, nil
}

// Guard calls fn and returns its error, or a *PanicError if it panicked.
func Guard(ctx context.Context, log *slog.Logger, where string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ctx, log, where, p)
		}
	}()
	return fn()
}

// GuardNamed is Guard for a caller on a hot path: the parts of where are
// joined only if fn panics, so a call that does not panic builds no name.
func GuardNamed(ctx context.Context, log *slog.Logger, fn func() error, where ...string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ctx, log, strings.Join(where, ""), p)
		}
	}()
	return fn()
}

func recovered(ctx context.Context, log *slog.Logger, where string, p any) error {
	if log != nil {
		log.ErrorContext(ctx, "panic recovered", "where", where, "panic", p, "stack", string(debug.Stack()))
	}
	return &PanicError{Where: where, Value: p}
}
