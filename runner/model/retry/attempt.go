package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// errCallTimeout is the cause of an attempt's context when the policy's
// call timeout ends it, which tells it apart from the caller's own
// deadline.
var errCallTimeout = errors.New("call timeout")

// outcome is how the attempts at one model ended: done (a complete
// response went out, or the consumer stopped), the caller's context ended
// (callerErr), or a failure (err), with partials out or not.
type outcome struct {
	done      bool
	callerErr error
	err       *model.Error
	streamed  bool
	attempts  int
	// partial is what the streamed partials carried, kept so that an
	// answer cut off mid-stream is stored as far as it got.
	partial []*agentrunnerv1.Part
	// usage is what the provider reported before the failure, nil when
	// it reported nothing; inFlight says that the call was made (not cut
	// off waiting to retry), so that a cut counts it.
	usage    *agentrunnerv1.UsageMetadata
	inFlight bool
}

// timeline is the timing of a call's attempts. It is kept from the first
// failure on, so that a call its first attempt answers, the common case,
// allocates nothing for it.
type timeline struct{ attempts []*agentrunnerv1.ModelAttempt }

// add records an attempt at model that started at start, had its first
// chunk at first (zero when none came), ended at end, and failed with
// code (empty when it answered).
func (tl *timeline) add(model string, start, first, end time.Time, code string) {
	a := &agentrunnerv1.ModelAttempt{Model: model, StartTime: timestamppb.New(start), Duration: durationpb.New(end.Sub(start)), ErrorCode: code}
	if !first.IsZero() {
		a.TimeToFirstChunk = durationpb.New(first.Sub(start))
	}
	tl.attempts = append(tl.attempts, a)
}

// of is what a call's last response carries: every attempt once there
// was more than one, else nothing.
func (tl *timeline) of() []*agentrunnerv1.ModelAttempt {
	if len(tl.attempts) < 2 {
		return nil
	}
	return tl.attempts
}

// run makes the attempts at one model.
func (m *Model) run(ctx context.Context, t *Target, req *model.Request, stream bool, tl *timeline, yield func(*model.Response, error) bool) outcome {
	start := m.clock.Now()
	for n := 1; ; n++ {
		out := m.attempt(ctx, t, req, stream, tl, yield)
		out.attempts = n
		if out.done || out.callerErr != nil || out.streamed {
			return out
		}
		if !out.err.Retryable || n >= t.Policy.MaxAttempts || !m.waitToRetry(ctx, t, n, start, &out) {
			return out
		}
	}
}

// waitToRetry waits before attempt n+1 at t after failed attempt n
// (out), and reports whether to make it: not when the wait would pass
// the policy's time limit, nor when ctx ended meanwhile (then out says
// so). Kept out of run, so that the attempts wait for their model in a
// small frame.
//
//go:noinline
func (m *Model) waitToRetry(ctx context.Context, t *Target, n int, start time.Time, out *outcome) bool {
	p := t.Policy
	wait := m.backoff(p, n, out.err.RetryAfter)
	if m.clock.Now().Add(wait).Sub(start) > p.MaxTotal {
		m.log.WarnContext(ctx, "model call failed; no retry, the wait would exceed the retry time limit",
			"model", t.Model.Name(), "attempt", n, "code", out.err.Code, "wait", wait, "max_total", p.MaxTotal, "err", out.err)
		return false
	}
	m.log.WarnContext(ctx, "model call failed; retrying",
		"model", t.Model.Name(), "attempt", n, "max_attempts", p.MaxAttempts,
		"code", out.err.Code, "wait", wait, "retry_after", out.err.RetryAfter, "err", out.err)
	if err := m.clock.Sleep(ctx, wait); err != nil {
		*out = outcome{callerErr: fmt.Errorf("model %q: waiting to retry: %w", t.Model.Name(), err), attempts: n}
		return false
	}
	return true
}

// backoff is the wait after failed attempt n (1-based): the exponential
// backoff capped at MaxBackoff, its upper half randomised so that clients
// failing together do not retry together, and never less than the
// provider's Retry-After.
func (m *Model) backoff(p Policy, n int, retryAfter time.Duration) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	d = d/2 + time.Duration(m.jitter()*float64(d/2))
	return max(d, retryAfter)
}

// attempt makes one call, forwarding partials and the complete response
// to the consumer as they come, and records its timing in tl when it
// failed or answered after a failure.
func (m *Model) attempt(ctx context.Context, t *Target, req *model.Request, stream bool, tl *timeline, yield func(*model.Response, error) bool) outcome {
	a := &attemptCall{m: m, ctx: ctx, t: t, req: req, tl: tl, yield: yield, start: m.clock.Now()}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if t.Policy.CallTimeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, t.Policy.CallTimeout, errCallTimeout)
	}
	defer cancel()
	t.Model.Generate(actx, req, stream)(a.take)
	out := a.out
	if out.done {
		return out
	}
	callErr := a.callErr
	out.usage, out.inFlight = model.UsageOf(callErr), true
	if err := ctx.Err(); err != nil {
		switch {
		case callErr == nil:
			callErr = fmt.Errorf("model %q: %w", t.Model.Name(), err)
		case !errors.Is(callErr, err):
			callErr = fmt.Errorf("model %q: %w (%v)", t.Model.Name(), err, callErr)
		}
		out.callerErr = callErr
		return out
	}
	out.err = classify(actx, t, callErr)
	tl.add(t.Model.Name(), a.start, a.first, m.clock.Now(), out.err.Code)
	return out
}

// attemptCall is what an attempt keeps while its model answers, in one
// allocation: the model's sequence calls take for each response (a
// range-over-func loop would move each variable its body changes to the
// heap on its own, and hold them all while the model is waited for).
type attemptCall struct {
	m     *Model
	ctx   context.Context
	t     *Target
	req   *model.Request
	tl    *timeline
	yield func(*model.Response, error) bool

	start, first time.Time
	out          outcome
	callErr      error
	// stopped: take returned false; a model that calls again is ignored.
	stopped bool
}

// take handles one element of the model's sequence and reports whether
// the model may send more.
func (a *attemptCall) take(r *model.Response, err error) bool {
	switch {
	case a.stopped:
		return false
	case err != nil:
		a.callErr, a.stopped = err, true
		return false
	case r == nil:
		return true
	}
	if a.first.IsZero() {
		a.first = a.m.clock.Now()
	}
	if r.Partial {
		a.out.streamed = true
		a.out.partial = append(a.out.partial, r.Content.GetParts()...)
		if a.yield(r, nil) {
			return true
		}
		// The consumer stopped mid-stream: the call is cut here, and
		// billed as far as it got.
		cut := &model.Response{Usage: model.CutUsage(a.req, nil, a.out.partial)}
		a.t.price(cut)
		model.ReportCut(a.ctx, cut.Usage, cut.Cost)
		a.out, a.stopped = outcome{done: true}, true
		return false
	}
	// The complete response ends the call, whatever the model might
	// still send.
	a.t.price(r)
	if len(a.tl.attempts) > 0 {
		a.tl.add(a.t.Model.Name(), a.start, a.first, a.m.clock.Now(), "")
		r.Attempts = a.tl.of()
	}
	a.yield(r, nil)
	a.out, a.stopped = outcome{done: true}, true
	return false
}

// cutErr is the caller's error of a call its context cut off: with the
// usage that counts it (model.CutUsage), priced, when the call was in
// flight.
func cutErr(t *Target, req *model.Request, out outcome) error {
	if !out.inFlight {
		return out.callerErr
	}
	cut := &model.Response{Usage: model.CutUsage(req, out.usage, out.partial)}
	t.price(cut)
	return &model.CutError{Err: out.callerErr, Usage: cut.Usage, Cost: cut.Cost}
}

// classify names what ended an attempt that gave no complete response.
func classify(actx context.Context, t *Target, err error) *model.Error {
	if context.Cause(actx) == errCallTimeout {
		return &model.Error{Code: model.CodeDeadlineExceeded, Retryable: true,
			Err: fmt.Errorf("model %q: no complete answer within the call timeout of %v", t.Model.Name(), t.Policy.CallTimeout)}
	}
	if err == nil {
		return model.Unavailable("model %q: the call ended without a complete response", t.Model.Name())
	}
	return model.Classify(err)
}
