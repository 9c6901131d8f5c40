package retry

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// fakeClock never sleeps: Sleep records the wait and moves Now on by it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// step is what one call of a scripted model does.
type step func(ctx context.Context, yield func(*model.Response, error) bool)

// scripted is a model whose nth call runs the nth step (the last again
// once they run out), recording the requests.
type scripted struct {
	name  string
	steps []step

	mu    sync.Mutex
	calls []*model.Request
}

func (s *scripted) Name() string { return s.name }

func (s *scripted) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		s.mu.Lock()
		n := len(s.calls)
		s.calls = append(s.calls, req)
		st := s.steps[min(n, len(s.steps)-1)]
		s.mu.Unlock()
		st(ctx, yield)
	}
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

func answer(s string) step {
	return func(_ context.Context, yield func(*model.Response, error) bool) {
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

func fail(code string, retryable bool, after time.Duration) step {
	return func(_ context.Context, yield func(*model.Response, error) bool) {
		yield(nil, &model.Error{Code: code, Retryable: retryable, RetryAfter: after, Err: errors.New("fake failure " + code)})
	}
}

// partialThen yields one partial, then runs next.
func partialThen(next step) step {
	return func(ctx context.Context, yield func(*model.Response, error) bool) {
		if !yield(&model.Response{Partial: true, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "par"}}}}}, nil) {
			return
		}
		next(ctx, yield)
	}
}

// block waits for the call's context to end, as a hung server does.
func block(ctx context.Context, yield func(*model.Response, error) bool) {
	<-ctx.Done()
	yield(nil, ctx.Err())
}

// fixture builds a retry model over primary and fallbacks with a fake
// clock, a fixed jitter of half and a log buffer.
type fixture struct {
	m     *Model
	clock *fakeClock
	log   *bytes.Buffer
}

func newFixture(t *testing.T, p Policy, primary model.Model, fallbacks ...model.Model) fixture {
	t.Helper()
	f := fixture{clock: newClock(), log: &bytes.Buffer{}}
	cfg := Config{
		Primary: Target{Model: primary, Policy: p},
		Logger:  slog.New(slog.NewTextHandler(f.log, nil)),
		Clock:   f.clock,
		Jitter:  func() float64 { return 0.5 },
	}
	for _, fb := range fallbacks {
		cfg.Fallbacks = append(cfg.Fallbacks, Target{Model: fb, Policy: p})
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f
}

func run(t *testing.T, m model.Model, ctx context.Context, req *model.Request, stream bool) ([]*model.Response, error) {
	t.Helper()
	var out []*model.Response
	for r, err := range m.Generate(ctx, req, stream) {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func hello() *model.Request {
	return &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}}}
}

func textOf(r *model.Response) string {
	var b strings.Builder
	for _, p := range r.Content.GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}
