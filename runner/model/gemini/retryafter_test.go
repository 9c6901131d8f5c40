package gemini

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// sleepless is a retry.Clock that records waits instead of sleeping.
type sleepless struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *sleepless) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *sleepless) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// withHeader answers with an API error carrying the Retry-After header
// value(), computed per request so that an HTTP date is in the future.
func withHeader(code int, status string, value func() string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", value())
		apiError(code, status, "slow down")(w, r)
	}
}

// TestRetryAfterHeader: an HTTP Retry-After header, in seconds or as an
// HTTP date, is what the retry waits at least; one beyond the policy's
// time limit is not waited for. Gemini's error body says nothing of it.
func TestRetryAfterHeader(t *testing.T) {
	date := func() string { return time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name      string
		first     reply
		wantAfter time.Duration // at least
		wantCalls int
		wantCode  string
	}{
		{"429 Retry-After: 2", withHeader(429, "RESOURCE_EXHAUSTED", func() string { return "2" }), 2 * time.Second, 2, ""},
		{"503 Retry-After: HTTP date", withHeader(503, "UNAVAILABLE", date), 3 * time.Second, 2, ""},
		{"429 Retry-After beyond the policy", withHeader(429, "RESOURCE_EXHAUSTED", func() string { return "3600" }), time.Hour, 1, model.CodeResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			fake := newFakeGemini(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n == 1 {
					tt.first(w, r)
					return
				}
				unary(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)(w, r)
			})
			gm := fake.model(t, "gemini-test")

			// The classification itself carries the header's wait.
			_, err := collectErr(gm.Generate(t.Context(), helloRequest(), false))
			var me *model.Error
			if !errors.As(err, &me) || me.RetryAfter < tt.wantAfter {
				t.Fatalf("error %v: RetryAfter %v, want at least %v", err, retryAfterOf(me), tt.wantAfter)
			}
			mu.Lock()
			calls = 0
			mu.Unlock()

			policy := retry.Policy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second, MaxTotal: time.Minute}
			clock := &sleepless{}
			m, err := retry.New(retry.Config{Primary: retry.Target{Model: gm, Policy: policy}, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := collectErr(m.Generate(t.Context(), helloRequest(), false))
			if err != nil || len(got) != 1 {
				t.Fatalf("got %v, %v; want one response", got, err)
			}
			if got[0].ErrorCode != tt.wantCode {
				t.Errorf("error code %q (%s), want %q", got[0].ErrorCode, got[0].ErrorMessage, tt.wantCode)
			}
			mu.Lock()
			n := calls
			mu.Unlock()
			if n != tt.wantCalls {
				t.Errorf("fake saw %d requests, want %d", n, tt.wantCalls)
			}
			for _, w := range clock.waits {
				if w > policy.MaxTotal {
					t.Errorf("waited %v, beyond the policy's %v", w, policy.MaxTotal)
				}
			}
			if tt.wantCalls == 2 && (len(clock.waits) != 1 || clock.waits[0] < tt.wantAfter) {
				t.Errorf("waits %v, want one of at least %v", clock.waits, tt.wantAfter)
			}
		})
	}
}

func retryAfterOf(me *model.Error) time.Duration {
	if me == nil {
		return 0
	}
	return me.RetryAfter
}
