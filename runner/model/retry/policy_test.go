package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
)

var quick = Policy{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 8 * time.Second, MaxTotal: time.Minute}

// TestRetryThenSuccess: retryable failures are retried, waiting the
// jittered backoff or the Retry-After, whichever is longer, and each retry
// is logged.
func TestRetryThenSuccess(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{
		fail(model.CodeResourceExhausted, true, 5*time.Second),
		fail(model.CodeUnavailable, true, 0),
		answer("hello"),
	}}
	f := newFixture(t, quick, inner)
	got, err := run(t, f.m, t.Context(), hello(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || textOf(got[0]) != "hello" || got[0].ErrorCode != "" {
		t.Fatalf("got %v, want the answer", got)
	}
	if inner.count() != 3 {
		t.Errorf("%d calls, want 3", inner.count())
	}
	// Backoffs 1s then 2s, each 3/4 of itself with a jitter of half; the
	// first is raised to the Retry-After.
	want := []time.Duration{5 * time.Second, 1500 * time.Millisecond}
	if len(f.clock.waits) != 2 || f.clock.waits[0] != want[0] || f.clock.waits[1] != want[1] {
		t.Errorf("waits %v, want %v", f.clock.waits, want)
	}
	if n := strings.Count(f.log.String(), "model call failed; retrying"); n != 2 {
		t.Errorf("%d retries logged, want 2:\n%s", n, f.log)
	}
	for _, s := range []string{"code=RESOURCE_EXHAUSTED", "retry_after=5s", "attempt=1", "attempt=2"} {
		if !strings.Contains(f.log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, f.log)
		}
	}
}

func TestBackoff(t *testing.T) {
	p := Policy{InitialBackoff: time.Second, MaxBackoff: 5 * time.Second}.withDefaults()
	tests := []struct {
		jitter     float64
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{0, 1, 0, 500 * time.Millisecond},
		{0.999999999, 1, 0, time.Second - time.Nanosecond},
		{0, 2, 0, time.Second},
		{0, 3, 0, 2 * time.Second},
		{0, 10, 0, 2500 * time.Millisecond}, // capped at MaxBackoff before jitter
		{1, 60, 0, 5 * time.Second},         // no overflow
		{0, 1, 9 * time.Second, 9 * time.Second},
	}
	for _, tt := range tests {
		m := &Model{jitter: func() float64 { return tt.jitter }}
		if got := m.backoff(p, tt.n, tt.retryAfter); got != tt.want {
			t.Errorf("backoff(jitter %v, attempt %d, retry after %v) = %v, want %v", tt.jitter, tt.n, tt.retryAfter, got, tt.want)
		}
	}
}

// TestBounds: attempts and total time both end the retries, with an
// in-band error carrying the stable code.
func TestBounds(t *testing.T) {
	tests := []struct {
		name      string
		policy    Policy
		step      step
		wantCalls int
		wantWaits int
		wantCode  string
	}{
		{"attempts", quick, fail(model.CodeUnavailable, true, 0), 3, 2, model.CodeUnavailable},
		{"one attempt", Policy{MaxAttempts: 1}, fail(model.CodeUnavailable, true, 0), 1, 0, model.CodeUnavailable},
		{"Retry-After beyond the time limit", quick, fail(model.CodeResourceExhausted, true, 10*time.Minute), 1, 0, model.CodeResourceExhausted},
		{"not retryable", quick, fail(model.CodeInvalidArgument, false, 0), 1, 0, model.CodeInvalidArgument},
		{"permission", quick, fail(model.CodePermissionDenied, false, 0), 1, 0, model.CodePermissionDenied},
		{"unclassified error", quick, func(_ context.Context, yield func(*model.Response, error) bool) {
			yield(nil, errors.New("something odd"))
		}, 1, 0, model.CodeUnavailable},
		{"no complete response", quick, func(context.Context, func(*model.Response, error) bool) {}, 3, 2, model.CodeUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := &scripted{name: "m", steps: []step{tt.step}}
			f := newFixture(t, tt.policy, inner)
			got, err := run(t, f.m, t.Context(), hello(), false)
			if err != nil {
				t.Fatalf("Go error %v, want an in-band error", err)
			}
			if len(got) != 1 || got[0].ErrorCode != tt.wantCode || !got[0].TurnComplete || got[0].Partial {
				t.Fatalf("got %+v, want one complete response with code %s", got, tt.wantCode)
			}
			if !strings.Contains(got[0].ErrorMessage, "m: "+tt.wantCode) {
				t.Errorf("message %q does not say which model failed how", got[0].ErrorMessage)
			}
			if inner.count() != tt.wantCalls || len(f.clock.waits) != tt.wantWaits {
				t.Errorf("%d calls and waits %v, want %d calls and %d waits", inner.count(), f.clock.waits, tt.wantCalls, tt.wantWaits)
			}
		})
	}
}

// TestNoRetryOnceStreamed: after a partial went out, a failure is final:
// neither a retry nor a fallback may add to the answer, and the final
// response keeps what was streamed, marked interrupted.
func TestNoRetryOnceStreamed(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{partialThen(partialThen(fail(model.CodeUnavailable, true, 0))), answer("never")}}
	fb := &scripted{name: "fb", steps: []step{answer("never either")}}
	f := newFixture(t, quick, inner, fb)
	got, err := run(t, f.m, t.Context(), hello(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Partial || !got[1].Partial || got[2].ErrorCode != model.CodeUnavailable || !got[2].TurnComplete {
		t.Fatalf("got %+v, want two partials then an in-band UNAVAILABLE", got)
	}
	if last := got[2]; !last.Interrupted || textOf(last) != "parpar" || len(last.Content.GetParts()) != 1 {
		t.Errorf("final response: interrupted %v, content %v; want interrupted with the streamed text joined", last.Interrupted, last.Content)
	}
	if got[0].Content.GetParts()[0].GetText() != "par" {
		t.Errorf("a streamed partial was changed: %v", got[0].Content)
	}
	if inner.count() != 1 || fb.count() != 0 {
		t.Errorf("calls: primary %d, fallback %d; want 1 and 0", inner.count(), fb.count())
	}
}

// TestNotInterruptedBeforeStreaming: a failure with nothing streamed ends
// without content and is not marked interrupted.
func TestNotInterruptedBeforeStreaming(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{fail(model.CodeInvalidArgument, false, 0)}}
	f := newFixture(t, quick, inner)
	got, err := run(t, f.m, t.Context(), hello(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Interrupted || got[0].Content != nil || got[0].ErrorCode != model.CodeInvalidArgument {
		t.Fatalf("got %+v, want one in-band INVALID_ARGUMENT, not interrupted", got)
	}
}

// TestRetryBeforeStreaming: a stream that fails before its first partial
// is retried.
func TestRetryBeforeStreaming(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{fail(model.CodeUnavailable, true, 0), partialThen(answer("par-done"))}}
	f := newFixture(t, quick, inner)
	got, err := run(t, f.m, t.Context(), hello(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Partial || textOf(got[1]) != "par-done" {
		t.Fatalf("got %+v", got)
	}
}

// TestCallTimeout: an attempt that hangs past the call timeout is cut off,
// retried, and ends as DEADLINE_EXCEEDED.
func TestCallTimeout(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{block}}
	p := quick
	p.MaxAttempts = 2
	p.CallTimeout = 10 * time.Millisecond
	f := newFixture(t, p, inner)
	got, err := run(t, f.m, t.Context(), hello(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ErrorCode != model.CodeDeadlineExceeded || !strings.Contains(got[0].ErrorMessage, "call timeout of 10ms") {
		t.Fatalf("got %+v, want an in-band DEADLINE_EXCEEDED", got)
	}
	if inner.count() != 2 {
		t.Errorf("%d calls, want 2", inner.count())
	}
}

// TestTimeoutThenSuccess: the timeout bounds each attempt, not the call.
func TestTimeoutThenSuccess(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{block, answer("late but fine")}}
	p := quick
	p.CallTimeout = 10 * time.Millisecond
	f := newFixture(t, p, inner)
	got, err := run(t, f.m, t.Context(), hello(), false)
	if err != nil || len(got) != 1 || textOf(got[0]) != "late but fine" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// TestFallback: once the primary is exhausted the fallbacks are tried in
// order, each under its own name, and the switch is logged.
func TestFallback(t *testing.T) {
	primary := &scripted{name: "primary", steps: []step{fail(model.CodeResourceExhausted, true, 0)}}
	broken := &scripted{name: "broken", steps: []step{fail(model.CodePermissionDenied, false, 0)}}
	good := &scripted{name: "good", steps: []step{answer("from the fallback")}}
	f := newFixture(t, quick, primary, broken, good)
	req := hello()
	req.Model = "primary-override"
	got, err := run(t, f.m, t.Context(), req, false)
	if err != nil || len(got) != 1 || textOf(got[0]) != "from the fallback" {
		t.Fatalf("got %+v, %v; want the fallback's answer", got, err)
	}
	if primary.count() != 3 || broken.count() != 1 || good.count() != 1 {
		t.Errorf("calls %d, %d, %d; want 3, 1, 1", primary.count(), broken.count(), good.count())
	}
	if primary.calls[0].Model != "primary-override" || good.calls[0].Model != "" {
		t.Errorf("models asked for: %q then %q; the override is the primary's alone", primary.calls[0].Model, good.calls[0].Model)
	}
	if f.m.Name() != "primary" {
		t.Errorf("Name() = %q", f.m.Name())
	}
	if n := strings.Count(f.log.String(), "trying the fallback model"); n != 2 {
		t.Errorf("%d fallbacks logged, want 2:\n%s", n, f.log)
	}
}

// TestAllFail: the in-band error names every model and carries the last
// failure's code.
func TestAllFail(t *testing.T) {
	primary := &scripted{name: "primary", steps: []step{fail(model.CodeResourceExhausted, true, 0)}}
	fb := &scripted{name: "fb", steps: []step{fail(model.CodeUnavailable, true, 0)}}
	f := newFixture(t, Policy{MaxAttempts: 2}, primary, fb)
	got, err := run(t, f.m, t.Context(), hello(), false)
	if err != nil || len(got) != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
	want := "primary: RESOURCE_EXHAUSTED after 2 attempt(s): fake failure RESOURCE_EXHAUSTED; fb: UNAVAILABLE after 2 attempt(s): fake failure UNAVAILABLE"
	if got[0].ErrorCode != model.CodeUnavailable || got[0].ErrorMessage != want {
		t.Errorf("error %s %q, want UNAVAILABLE %q", got[0].ErrorCode, got[0].ErrorMessage, want)
	}
}

// TestCallerCancel: the caller's own cancellation is a Go error, neither
// retried nor turned into an in-band answer.
func TestCallerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	inner := &scripted{name: "m", steps: []step{func(ctx context.Context, yield func(*model.Response, error) bool) {
		cancel()
		block(ctx, yield)
	}}}
	fb := &scripted{name: "fb", steps: []step{answer("no")}}
	f := newFixture(t, quick, inner, fb)
	got, err := run(t, f.m, ctx, hello(), false)
	if !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("got %+v, %v; want context.Canceled alone", got, err)
	}
	if inner.count() != 1 || fb.count() != 0 {
		t.Errorf("calls %d and %d, want 1 and 0", inner.count(), fb.count())
	}
}

// TestConsumerStops: a consumer that stops early stops the call.
func TestConsumerStops(t *testing.T) {
	inner := &scripted{name: "m", steps: []step{partialThen(answer("rest"))}}
	f := newFixture(t, quick, inner)
	n := 0
	for range f.m.Generate(t.Context(), hello(), true) {
		n++
		break
	}
	if n != 1 || inner.count() != 1 {
		t.Errorf("%d responses, %d calls", n, inner.count())
	}
}

// TestDefaultTimeouts: a policy that sets nothing still bounds each
// attempt, so that a hung provider cannot hold a session until the run's
// own deadline.
func TestDefaultTimeouts(t *testing.T) {
	p := Policy{}.withDefaults()
	if p.CallTimeout != DefaultCallTimeout || DefaultCallTimeout != 2*time.Minute {
		t.Errorf("default call timeout %v (DefaultCallTimeout %v), want 2m", p.CallTimeout, DefaultCallTimeout)
	}
	if got := (Policy{CallTimeout: time.Second}).withDefaults().CallTimeout; got != time.Second {
		t.Errorf("an explicit call timeout became %v", got)
	}
}
