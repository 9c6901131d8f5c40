// Package retry wraps models with retries, per-call timeouts and fallback
// models, so that a rate limit or a passing outage of one provider does not
// fail the turn.
//
// A call is retried when it failed with a retryable *model.Error (429, 5xx,
// a dropped connection, a malformed answer, a call timeout), with
// exponential backoff and jitter, never sooner than the provider's
// Retry-After, and within the policy's bounds on attempts and time. It is
// retried only while nothing of it has been streamed to the caller: once a
// partial is out, a second attempt would show the caller a different
// answer after the start of the first; such a call ends at once with the
// text streamed so far as its content, marked Interrupted, so that what
// the caller saw is what the session keeps, and with the usage that
// counts it (model.CutUsage: as the provider reported it so far, or
// estimated), priced. A call the caller's own context cuts off ends with
// a *model.CutError carrying the same. Otherwise the fallback models
// are tried
// in order, each with its own policy. When all have failed, the call ends
// with one complete in-band Response carrying a stable model.Code* error
// code and what each model reported, never a bare Go error: the runner
// records it as an event and the session goes on. Only the caller's own
// cancellation ends the sequence with a Go error.
//
// Every retry and every fallback is logged.
//
// Imports: model and the generated messages. It must not import the
// runner, agents, tools, plugins, store, any provider package or gRPC
// (runner/deps_test.go checks).
package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// Policy bounds the attempts at one model. Zero fields take the defaults
// noted.
type Policy struct {
	// MaxAttempts counts the first attempt too; default 3. One means no
	// retry.
	MaxAttempts int
	// InitialBackoff is the wait before the second attempt, before jitter;
	// default 1s. Each further wait doubles, up to MaxBackoff.
	InitialBackoff time.Duration
	// MaxBackoff caps a wait computed from the backoff; default 30s. A
	// longer Retry-After is still honoured, within MaxTotal.
	MaxBackoff time.Duration
	// MaxTotal bounds the time from the first attempt at this model to the
	// start of the last; default 2m. A wait that would end beyond it is not
	// made: the next model is tried instead.
	MaxTotal time.Duration
	// CallTimeout bounds each attempt, streaming included; default
	// DefaultCallTimeout (2m). An attempt that runs out is a
	// DEADLINE_EXCEEDED failure, which is retried like an outage while
	// nothing of it has been streamed. Attempts and waits together thus
	// take at most MaxTotal plus one CallTimeout. (Silence mid-response is
	// bounded sooner by the provider's idle timeout, model.IdleTimeout.)
	CallTimeout time.Duration
}

// DefaultCallTimeout is the CallTimeout of a policy that sets none: long
// enough for a long answer, short enough that a provider that hangs
// before answering frees the session within minutes rather than holding
// it until the run's own deadline (15 minutes by default).
const DefaultCallTimeout = 2 * time.Minute

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = time.Second
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 30 * time.Second
	}
	if p.MaxTotal <= 0 {
		p.MaxTotal = 2 * time.Minute
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = DefaultCallTimeout
	}
	return p
}

// Target is a model and the policy its calls are made under.
type Target struct {
	Model  model.Model
	Policy Policy
	// Name is the models entry the target is (the name agents give);
	// with it, a complete response with usage gets a Cost: Price's, or an
	// unpriced one when Price is nil. Without it nothing is priced.
	Name  string
	Price *model.Price
	// MaxOutputTokens is the models entry's output cap; 0 for none.
	MaxOutputTokens int32
}

// price sets r's cost from its usage, as the package doc says.
func (t *Target) price(r *model.Response) {
	switch {
	case r.Usage == nil || t.Name == "" || r.Cost != nil:
	case t.Price != nil:
		r.Cost = t.Price.Cost(t.Name, r.Usage)
	default:
		r.Cost = model.Unpriced(t.Name)
	}
}

// Clock is the time the waits are measured and made in. Tests pass one
// that does not sleep.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or until ctx ends, when it returns ctx's error.
	Sleep(ctx context.Context, d time.Duration) error
}

// Config configures New.
type Config struct {
	// Primary is the model called first. Required.
	Primary Target
	// Fallbacks are tried in order once Primary has failed.
	Fallbacks []Target
	// Logger receives a record per retry and per fallback; nil discards.
	Logger *slog.Logger
	// Clock defaults to the real one.
	Clock Clock
	// Jitter returns a number in [0, 1) that scales the random half of
	// each wait; nil means math/rand/v2.
	Jitter func() float64
}

// Model is a model with retries and fallbacks. It is safe for concurrent
// use when its models are.
type Model struct {
	targets []Target
	log     *slog.Logger
	clock   Clock
	jitter  func() float64
}

var _ model.Model = (*Model)(nil)

// MaxOutputTokens is the primary target's output cap (0: none), which
// the LLM agent applies to its requests and the budgets reserve.
func (m *Model) MaxOutputTokens() int32 { return m.targets[0].MaxOutputTokens }

// Price is the primary target's price list, nil when unpriced; what a
// call is estimated to cost before it is made.
func (m *Model) Price() *model.Price { return m.targets[0].Price }

// New returns the wrapped model.
func New(cfg Config) (*Model, error) {
	if cfg.Primary.Model == nil {
		return nil, errors.New("retry: no primary model")
	}
	m := &Model{log: cfg.Logger, clock: cfg.Clock, jitter: cfg.Jitter}
	for i, t := range append([]Target{cfg.Primary}, cfg.Fallbacks...) {
		if t.Model == nil {
			return nil, fmt.Errorf("retry: fallback %d has no model", i)
		}
		t.Policy = t.Policy.withDefaults()
		m.targets = append(m.targets, t)
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.clock == nil {
		m.clock = realClock{}
	}
	if m.jitter == nil {
		m.jitter = rand.Float64
	}
	return m, nil
}

// Name returns the primary model's name.
func (m *Model) Name() string { return m.targets[0].Model.Name() }

// CachesContext reports whether the primary model uses context caching;
// a fallback that does not sends its requests whole.
func (m *Model) CachesContext() bool {
	c, ok := m.targets[0].Model.(model.ContextCacher)
	return ok && c.CachesContext()
}

// failure is how one model's attempts ended.
type failure struct {
	model    string
	attempts int
	err      *model.Error
}

// Generate calls the primary model, retrying and falling back as the
// package doc says; see model.Model for the sequence it yields.
//
// The call waits for its model on the run's goroutine, below everything
// that runs the run: what fails over and logs is in calls of their own,
// so that the frames here stay small while the call waits (a goroutine's
// stack is as deep as where it parks, and the collector's goal counts it).
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if req == nil {
			yield(nil, errors.New("retry: nil request"))
			return
		}
		var c call
		for i := range m.targets {
			t := &m.targets[i]
			r := forTarget(i, req)
			out := m.run(ctx, t, r, stream, &c.tl, yield)
			if out.done || m.failedOver(ctx, &c, i, t, r, &out, yield) {
				return
			}
		}
		m.allFailed(ctx, &c, yield)
	}
}

// call is what a call's attempts kept of their failures.
type call struct {
	failures []failure
	tl       timeline
}

// forTarget is req as target i gets it: an override names the primary's
// model; a fallback is called by its own name.
func forTarget(i int, req *model.Request) *model.Request {
	if i == 0 || req.Model == "" {
		return req
	}
	c := *req
	c.Model = ""
	return &c
}

// failedOver ends a call whose attempts at target i (t, asked r) gave
// no complete answer, when nothing may follow them: the caller's context
// ended, or part of an answer is out. Else it logs the fallback and
// reports false.
//
//go:noinline
func (m *Model) failedOver(ctx context.Context, c *call, i int, t *Target, r *model.Request, out *outcome, yield func(*model.Response, error) bool) bool {
	if out.callerErr != nil {
		yield(nil, cutErr(t, r, *out))
		return true
	}
	c.failures = append(c.failures, failure{model: t.Model.Name(), attempts: out.attempts, err: out.err})
	if out.streamed {
		// Part of an answer is out: no other model may add to it. What
		// is out is kept, marked as cut off. The provider bills the call
		// as far as it got: it counts, as reported so far or estimated.
		resp := failed(c.failures)
		resp.Content, resp.Interrupted = joinPartials(out.partial), true
		resp.Usage = model.CutUsage(r, out.usage, out.partial)
		resp.Attempts = c.tl.of()
		t.price(resp)
		m.log.ErrorContext(ctx, "model call failed mid-stream", "model", t.Model.Name(), "code", resp.ErrorCode, "err", resp.ErrorMessage)
		yield(resp, nil)
		return true
	}
	if i+1 < len(m.targets) {
		m.log.WarnContext(ctx, "model failed; trying the fallback model",
			"model", t.Model.Name(), "fallback", m.targets[i+1].Model.Name(),
			"code", out.err.Code, "attempts", out.attempts, "err", out.err)
	}
	return false
}

// allFailed answers a call every model failed.
//
//go:noinline
func (m *Model) allFailed(ctx context.Context, c *call, yield func(*model.Response, error) bool) {
	resp := failed(c.failures)
	resp.Attempts = c.tl.of()
	m.log.ErrorContext(ctx, "model call failed", "model", m.Name(), "code", resp.ErrorCode, "err", resp.ErrorMessage)
	yield(resp, nil)
}

// failed is the in-band answer once every model has failed. Its code is
// that of the last failure, the one a retry of the whole turn would meet
// first; the message says what happened to each model.
func failed(fs []failure) *model.Response {
	msgs := make([]string, 0, len(fs))
	for _, f := range fs {
		msgs = append(msgs, fmt.Sprintf("%s: %s after %d attempt(s): %v", f.model, f.err.Code, f.attempts, f.err))
	}
	return &model.Response{
		TurnComplete: true,
		ErrorCode:    fs[len(fs)-1].err.Code,
		ErrorMessage: strings.Join(msgs, "; "),
	}
}

// joinPartials is the content the partials of a cut-off answer carried:
// their parts in order, consecutive text of the same kind joined, as the
// complete response would have held it. The partials' parts are not
// changed.
func joinPartials(parts []*agentrunnerv1.Part) *agentrunnerv1.Content {
	c := &agentrunnerv1.Content{Role: "model"}
	var last *agentrunnerv1.Part
	for _, p := range parts {
		t, ok := p.GetData().(*agentrunnerv1.Part_Text)
		if !ok {
			c.Parts = append(c.Parts, p.CloneVT())
			last = nil
			continue
		}
		if last != nil && last.GetThought() == p.GetThought() {
			last.Data = &agentrunnerv1.Part_Text{Text: last.GetText() + t.Text}
			if len(p.GetThoughtSignature()) > 0 {
				last.ThoughtSignature = p.GetThoughtSignature()
			}
			continue
		}
		last = p.CloneVT()
		c.Parts = append(c.Parts, last)
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
