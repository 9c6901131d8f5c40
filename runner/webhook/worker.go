package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Outcomes of an attempt, as Options.Observe is told of them once the
// outbox is settled.
const (
	OutcomeDelivered = "delivered" // a 2xx answer: the delivery is done
	OutcomeRetry     = "retry"     // failed; tried again later
	OutcomeFailed    = "failed"    // given up, kept as failed
)

// Options configure a Worker. Zero values take the defaults named.
type Options struct {
	// Allow is the hosts deliveries may go to; a delivery to any other
	// fails for good, unsent (the list may have changed since its run).
	Allow Allow
	// Secret returns the secret an app's deliveries are signed with.
	// Required.
	Secret func(app string) ([]byte, error)
	// Client sends the POSTs; nil means one that follows no redirect (a
	// redirect could lead off the allowed hosts), with AttemptTimeout.
	Client *http.Client
	// AttemptTimeout bounds one attempt (10s).
	AttemptTimeout time.Duration
	// RetryFor bounds the time from a delivery's queueing within which
	// failed attempts are retried (24h); after it the delivery fails for
	// good.
	RetryFor time.Duration
	// MinBackoff and MaxBackoff bound the wait before a retry (1s, 10m):
	// see Backoff.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often the outbox is read when idle (1s).
	Poll time.Duration
	// Lease is how long a claimed delivery is this worker's alone
	// (twice AttemptTimeout): a worker that dies mid-attempt leaves it to
	// another worker, or to itself restarted, once the lease ends.
	Lease time.Duration
	// Parallel bounds the attempts in flight (8).
	Parallel int
	// Log gets a line for each retry and failure (slog.Default()).
	Log *slog.Logger
	// Observe, when set, is told each attempt's outcome (a metric).
	Observe func(outcome string)
	// Now is the clock (time.Now).
	Now func() time.Time
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AttemptTimeout, 10*time.Second)
	def(&o.RetryFor, 24*time.Hour)
	def(&o.MinBackoff, time.Second)
	def(&o.MaxBackoff, 10*time.Minute)
	def(&o.Poll, time.Second)
	def(&o.Lease, 2*o.AttemptTimeout)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Client == nil {
		o.Client = &http.Client{
			Timeout:       o.AttemptTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
}

// Backoff is the wait before retry number attempt (1 for the first
// retry): min doubled per attempt, capped at max, of which the second
// half is jitter (r in [0, 1) picks where): from half the step to the
// whole step, so that deliveries that failed together spread out, and
// never less than min/2.
func Backoff(attempt int, minB, maxB time.Duration, r float64) time.Duration {
	step := minB
	for i := 1; i < attempt && step < maxB; i++ {
		step *= 2
	}
	step = min(step, maxB)
	return step/2 + time.Duration(r*float64(step/2))
}

// Worker delivers the outbox: it claims due deliveries, POSTs them, and
// settles each (deleted when delivered, retried later, or failed).
// Several workers, in one process or in replicas sharing a PostgreSQL
// store, share an outbox: a claim is one worker's alone.
type Worker struct {
	outbox store.WebhookOutbox
	opts   Options
	kick   chan struct{}
}

// New returns a worker on outbox; Run starts it.
func New(outbox store.WebhookOutbox, opts Options) (*Worker, error) {
	if opts.Secret == nil {
		return nil, errors.New("webhook worker: Options.Secret is required")
	}
	opts.defaults()
	return &Worker{outbox: outbox, opts: opts, kick: make(chan struct{}, 1)}, nil
}

// Kick makes an idle worker read the outbox now rather than at its next
// poll.
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done, then returns once its attempts in
// flight are settled (each bounded by AttemptTimeout).
func (w *Worker) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		full := w.round(ctx)
		if ctx.Err() != nil {
			return
		}
		if full {
			continue // more may be due
		}
		timer.Reset(w.opts.Poll)
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.kick:
		}
	}
}

// round claims up to Parallel due deliveries and attempts them, and
// reports whether it claimed as many as it could.
func (w *Worker) round(ctx context.Context) bool {
	ds, err := w.outbox.ClaimDeliveries(ctx, w.opts.Now(), w.opts.Lease, w.opts.Parallel)
	if err != nil {
		if ctx.Err() == nil {
			w.opts.Log.Error("claim webhook deliveries", "err", err)
		}
		return false
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { w.safeAttempt(ctx, d) })
	}
	wg.Wait()
	return len(ds) == w.opts.Parallel
}

// safeAttempt is attempt in a goroutine of its own, where a panic would
// stop the whole server: it is logged with its stack, and the delivery,
// still claimed, is due again once its lease ends.
func (w *Worker) safeAttempt(ctx context.Context, d *agentrunnerv1.WebhookDelivery) {
	defer func() {
		if v := recover(); v != nil {
			w.opts.Log.Error("webhook attempt panicked", "delivery", d.GetDeliveryId(), "panic", v, "stack", string(debug.Stack()))
		}
	}()
	w.attempt(ctx, d)
}

// attempt makes one attempt at d and settles it. Its settlement is
// written even when ctx ends meanwhile (a drain): a POST cut short is
// due again at once for whoever claims it next.
func (w *Worker) attempt(ctx context.Context, d *agentrunnerv1.WebhookDelivery) {
	settle, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opts.AttemptTimeout)
	defer cancel()
	if err := w.opts.Allow.Check(d.GetUrl()); err != nil {
		w.fail(settle, d, err, true)
		return
	}
	err := w.post(ctx, d)
	if err == nil {
		if err := w.outbox.DeleteDelivery(settle, d.GetDeliveryId(), d.GetClaim()); err != nil {
			// Delivered, but the outbox keeps it: it goes again, which
			// at-least-once allows and the id tells the receiver.
			w.opts.Log.Warn("webhook delivered but not settled", "delivery", d.GetDeliveryId(), "err", err)
		}
		w.observe(OutcomeDelivered)
		return
	}
	if ctx.Err() != nil {
		// Drained mid-POST: not the receiver's failure. Its lease ends
		// now, due at once for the next worker.
		d.NextAttemptTime = timestamppb.New(w.opts.Now())
		if err := w.outbox.UpdateDelivery(settle, d); err != nil {
			w.opts.Log.Warn("webhook attempt cut by shutdown not settled; its lease will run out", "delivery", d.GetDeliveryId(), "err", err)
		}
		return
	}
	w.fail(settle, d, err, false)
}

// fail settles an attempt that failed: retried after a backoff, or, past
// RetryFor or when final, kept as failed.
func (w *Worker) fail(ctx context.Context, d *agentrunnerv1.WebhookDelivery, cause error, final bool) {
	now := w.opts.Now()
	d.Attempts++
	d.LastError = cause.Error()
	next := now.Add(Backoff(int(d.GetAttempts()), w.opts.MinBackoff, w.opts.MaxBackoff, rand.Float64()))
	if final || next.Sub(d.GetCreateTime().AsTime()) > w.opts.RetryFor {
		d.State = agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED
		next = now
	}
	d.NextAttemptTime = timestamppb.New(next)
	log := w.opts.Log.With("delivery", d.GetDeliveryId(), "run", d.GetRun().GetRunId(), "attempts", d.GetAttempts(), "err", cause)
	if d.GetState() == agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED {
		w.observe(OutcomeFailed)
		log.Error("webhook delivery failed for good")
	} else {
		w.observe(OutcomeRetry)
		log.Warn("webhook delivery failed, will retry", "next", next)
	}
	if err := w.outbox.UpdateDelivery(ctx, d); err != nil {
		w.opts.Log.Warn("webhook attempt not settled; its lease will run out", "delivery", d.GetDeliveryId(), "err", err)
	}
}

// post sends d once: nil for a 2xx answer.
func (w *Worker) post(ctx context.Context, d *agentrunnerv1.WebhookDelivery) error {
	secret, err := w.opts.Secret(d.GetRun().GetAppName())
	if err != nil {
		return fmt.Errorf("webhook secret of app %q: %w", d.GetRun().GetAppName(), err)
	}
	body, err := protojson.Marshal(d.GetRun())
	if err != nil {
		return fmt.Errorf("encode run %s: %w", d.GetRun().GetRunId(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, w.opts.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.GetUrl(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentrunner-webhook/1")
	req.Header.Set(HeaderDeliveryID, d.GetDeliveryId())
	req.Header.Set(HeaderSignature, SignatureHeader(secret, w.opts.Now(), body))
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", d.GetUrl(), resp.Status)
	}
	return nil
}

func (w *Worker) observe(outcome string) {
	if w.opts.Observe != nil {
		w.opts.Observe(outcome)
	}
}
