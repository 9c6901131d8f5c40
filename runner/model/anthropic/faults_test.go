package anthropic

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
)

// These tests run the retry wrapper over the real SDK against the fake:
// each injected fault ends as the retry package promises, retried into a
// success or an in-band error with the stable code.

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

var faultPolicy = retry.Policy{MaxAttempts: 3, InitialBackoff: 100 * time.Millisecond, MaxTotal: time.Minute, CallTimeout: 5 * time.Second}

func withRetry(t *testing.T, clock retry.Clock, p retry.Policy, primary model.Model, fallbacks ...model.Model) model.Model {
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

var (
	okStream  = sse(evStart, evTextStart, evTextHel, evTextLo, evStop0, evDeltaEnd, evMsgStop)
	okPartial = []string{evStart, evTextStart, evTextHel}
)

func TestFaults(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		timeout   time.Duration
		replies   []reply
		wantText  string // the answer, or "" for an in-band error
		wantCode  string
		wantCalls int
		minWait   time.Duration
	}{
		{name: "429 with Retry-After, then success", replies: []reply{apiError(429, "rate_limit_error", "slow", "Retry-After", "4"), unary(textReply)},
			wantText: "ok", wantCalls: 2, minWait: 4 * time.Second},
		{name: "500 then success", replies: []reply{apiError(500, "api_error", "boom"), unary(textReply)}, wantText: "ok", wantCalls: 2},
		{name: "503 then success, stream", stream: true, replies: []reply{apiError(503, "api_error", "down"), okStream}, wantText: "Hello", wantCalls: 2},
		{name: "overloaded event before any text, then success", stream: true, replies: []reply{sse(evStart, `error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), okStream},
			wantText: "Hello", wantCalls: 2},
		{name: "malformed JSON then success", replies: []reply{unary(`{"content":[`), unary(textReply)}, wantText: "ok", wantCalls: 2},
		{name: "529 every time", replies: []reply{apiError(529, "overloaded_error", "Overloaded")}, wantCode: model.CodeUnavailable, wantCalls: 3},
		{name: "429 every time, stream", stream: true, replies: []reply{apiError(429, "rate_limit_error", "slow")}, wantCode: model.CodeResourceExhausted, wantCalls: 3},
		{name: "bad key", replies: []reply{apiError(401, "authentication_error", "invalid x-api-key")}, wantCode: model.CodePermissionDenied, wantCalls: 1},
		{name: "bad request", replies: []reply{apiError(400, "invalid_request_error", "bad")}, wantCode: model.CodeInvalidArgument, wantCalls: 1},
		{name: "hang past the timeout", timeout: 50 * time.Millisecond, replies: []reply{hang()}, wantCode: model.CodeDeadlineExceeded, wantCalls: 3},
		{name: "hang mid-stream past the timeout", stream: true, timeout: 50 * time.Millisecond, replies: []reply{hang(okPartial...)}, wantCode: model.CodeDeadlineExceeded, wantCalls: 1},
		{name: "dropped mid-stream", stream: true, replies: []reply{dropAfter(okPartial...), okStream}, wantCode: model.CodeUnavailable, wantCalls: 1},
		{name: "dropped before the first event, then success", stream: true, replies: []reply{dropAfter(), okStream}, wantText: "Hello", wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, tt.replies...)
			p := faultPolicy
			if tt.timeout > 0 {
				p.CallTimeout = tt.timeout
			}
			clock := &sleepless{}
			m := withRetry(t, clock, p, fake.model(t, "claude-test"))
			got, err := collectErr(m.Generate(t.Context(), helloRequest(), tt.stream))
			if err != nil {
				t.Fatalf("Go error %v; every fault must end in band", err)
			}
			last := got[len(got)-1]
			for _, r := range got[:len(got)-1] {
				if !r.Partial {
					t.Errorf("complete response before the last: %s", showResponse(r))
				}
			}
			if tt.wantText != "" && (textOf(last) != tt.wantText || last.ErrorCode != "") {
				t.Errorf("last response %s, want the answer %q", showResponse(last), tt.wantText)
			}
			if tt.wantCode != "" && (last.ErrorCode != tt.wantCode || !last.TurnComplete || !strings.Contains(last.ErrorMessage, "claude-test")) {
				t.Errorf("last response %s, want an in-band %s naming the model", showResponse(last), tt.wantCode)
			}
			if n := len(fake.seen()); n != tt.wantCalls {
				t.Errorf("fake saw %d requests, want %d", n, tt.wantCalls)
			}
			if tt.minWait > 0 && (len(clock.waits) == 0 || clock.waits[0] < tt.minWait) {
				t.Errorf("waits %v, want the first at least %v", clock.waits, tt.minWait)
			}
		})
	}
}

// TestFallbackAnswers: the primary model is out of quota, so the fallback
// answers.
func TestFallbackAnswers(t *testing.T) {
	exhausted := newFake(t, apiError(429, "rate_limit_error", "exhausted"))
	spare := newFake(t, unary(`{"id":"m","type":"message","role":"assistant","model":"claude-spare-1","content":[{"type":"text","text":"from the spare"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	m := withRetry(t, &sleepless{}, faultPolicy, exhausted.model(t, "claude-primary"), spare.model(t, "claude-spare"))
	got := collect(t, m.Generate(t.Context(), helloRequest(), false))
	if len(got) != 1 || textOf(got[0]) != "from the spare" || got[0].ModelVersion != "claude-spare-1" {
		t.Fatalf("got %v, want the spare's answer", got)
	}
	if len(exhausted.seen()) != 3 || len(spare.seen()) != 1 || spare.seen()[0].Body["model"] != "claude-spare" {
		t.Errorf("requests: primary %d, spare %d", len(exhausted.seen()), len(spare.seen()))
	}
}
