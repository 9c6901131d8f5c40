package anthropic

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// withRetryAfter answers with an API error whose Retry-After is value(),
// computed per request so that an HTTP date is in the future.
func withRetryAfter(code int, typ string, value func() string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		apiError(code, typ, "slow down", "Retry-After", value())(w, r)
	}
}

// TestRetryAfterHeader: a Retry-After header, in seconds or as an HTTP
// date, on a 429 or a 503, is what the retry waits at least; one beyond
// the policy's time limit is not waited for (the call ends in band).
func TestRetryAfterHeader(t *testing.T) {
	date := func() string { return time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat) }
	tests := []struct {
		name      string
		first     reply
		wantAfter time.Duration // at least
		wantCalls int
		wantCode  string
	}{
		{"429 Retry-After: 2", withRetryAfter(429, "rate_limit_error", func() string { return "2" }), 2 * time.Second, 2, ""},
		{"503 Retry-After: HTTP date", withRetryAfter(503, "overloaded_error", date), 3 * time.Second, 2, ""},
		{"429 Retry-After beyond the policy", withRetryAfter(429, "rate_limit_error", func() string { return "3600" }), time.Hour, 1, model.CodeResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			direct := newFake(t, tt.first)
			_, err := collectErr(direct.model(t, "m-test").Generate(t.Context(), helloRequest(), false))
			var me *model.Error
			if !errors.As(err, &me) || me.RetryAfter < tt.wantAfter {
				t.Fatalf("error %v, want a *model.Error with RetryAfter at least %v", err, tt.wantAfter)
			}

			fake := newFake(t, tt.first, unary(textReply))
			policy := retry.Policy{MaxAttempts: 3, InitialBackoff: 10 * time.Millisecond, MaxBackoff: time.Second, MaxTotal: time.Minute}
			clock := &sleepless{}
			m := withRetry(t, clock, policy, fake.model(t, "m-test"))
			got, err := collectErr(m.Generate(t.Context(), helloRequest(), false))
			if err != nil || len(got) != 1 {
				t.Fatalf("got %v, %v; want one response", got, err)
			}
			if got[0].ErrorCode != tt.wantCode {
				t.Errorf("error code %q (%s), want %q", got[0].ErrorCode, got[0].ErrorMessage, tt.wantCode)
			}
			if n := len(fake.seen()); n != tt.wantCalls {
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
