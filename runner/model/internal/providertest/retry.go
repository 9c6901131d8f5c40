package providertest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// Clock is a retry.Clock that records waits instead of sleeping, so that
// the tests of backoff and Retry-After take no time and can check how
// long the retry would have waited.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// Now implements retry.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep implements retry.Clock: it records d and moves the clock on.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// Waits returns the waits so far, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// FaultPolicy is the retry policy of the fault tests: three attempts,
// each bounded so that a hang ends.
var FaultPolicy = retry.Policy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxTotal: time.Minute, CallTimeout: 5 * time.Second}

// WithRetry wraps primary, and fallbacks, in the retry package with
// policy p on clock, logging nowhere.
func WithRetry(t testing.TB, clock retry.Clock, p retry.Policy, primary model.Model, fallbacks ...model.Model) model.Model {
	t.Helper()
	cfg := retry.Config{Primary: retry.Target{Model: primary, Policy: p}, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
	for _, fb := range fallbacks {
		cfg.Fallbacks = append(cfg.Fallbacks, retry.Target{Model: fb, Policy: p})
	}
	m, err := retry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
