package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/webhook"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

var testSecret = []byte("test-secret-0123456789abcdef")

// receiver is a webhook endpoint on 127.0.0.1 that verifies every
// delivery and answers 503 to the first failFirst attempts of each.
type receiver struct {
	t         *testing.T
	srv       *httptest.Server
	failFirst int
	mu        sync.Mutex
	attempts  map[string]int // by delivery id
	delivered map[string]bool
	ids       map[string]string // delivery id -> run id
	got       chan string       // delivery ids, once each, as delivered
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	r := &receiver{t: t, failFirst: failFirst, attempts: map[string]int{}, delivered: map[string]bool{}, ids: map[string]string{}, got: make(chan string, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := webhook.Verify(testSecret, req.Header.Get(webhook.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
		r.t.Errorf("delivery with a bad signature: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var run struct {
		RunID  string `json:"runId"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &run); err != nil || run.RunID == "" {
		r.t.Errorf("delivery body %s: %v", body, err)
	}
	id := req.Header.Get(webhook.HeaderDeliveryID)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[id]++
	if prev, ok := r.ids[id]; ok && prev != run.RunID {
		r.t.Errorf("delivery id %s for runs %s and %s", id, prev, run.RunID)
	}
	r.ids[id] = run.RunID
	if r.attempts[id] <= r.failFirst {
		http.Error(w, "not yet", http.StatusServiceUnavailable)
		return
	}
	if !r.delivered[id] {
		r.delivered[id] = true
		r.got <- id
	}
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.attempts {
		n += a
	}
	return n
}

// endRuns stores n ended runs of session k that call back url.
func endRuns(t *testing.T, s *boltstore.Store, n int, url string) {
	t.Helper()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		run := &agentrunnerv1.Run{RunId: fmt.Sprintf("r-%d", i), AppName: k.App, UserId: k.User, SessionId: k.Session,
			Status: agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, CreateTime: timestamppb.Now(), Webhook: &agentrunnerv1.Webhook{Url: url}}
		if err := s.PutRun(t.Context(), run); err != nil {
			t.Fatal(err)
		}
	}
}

func openStore(t *testing.T) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// startWorker runs a worker until the returned stop, which waits for it.
func startWorker(t *testing.T, s store.WebhookOutbox, allow []string, opts webhook.Options) (stop func()) {
	a, err := webhook.ParseAllow(allow)
	if err != nil {
		t.Fatal(err)
	}
	opts.Allow = a
	opts.Log = slog.New(slog.DiscardHandler)
	opts.Secret = func(string) ([]byte, error) { return testSecret, nil }
	opts.MinBackoff, opts.MaxBackoff, opts.Poll = 5*time.Millisecond, 20*time.Millisecond, 5*time.Millisecond
	w, err := webhook.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func hostOf(url string) string { return strings.TrimPrefix(url, "http://") }

func deliveries(t *testing.T, s store.WebhookOutbox, st agentrunnerv1.WebhookDeliveryState) []*agentrunnerv1.WebhookDelivery {
	ds, err := s.ListDeliveries(t.Context(), st, store.MaxClaim)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestWorkerDelivers: every ended run is delivered, signed, after the
// receiver's refusals are retried with the same delivery id; then the
// outbox is empty.
func TestWorkerDelivers(t *testing.T) {
	s := openStore(t)
	rcv := newReceiver(t, 2)
	const runs = 6
	endRuns(t, s, runs, rcv.srv.URL+"/hook")
	settled := make(chan string, 10*runs)
	stop := startWorker(t, s, []string{hostOf(rcv.srv.URL)}, webhook.Options{Observe: func(o string) { settled <- o }})
	deadline := time.After(30 * time.Second)
	for n := 0; n < runs; {
		select {
		case o := <-settled:
			if o == webhook.OutcomeDelivered {
				n++
			}
		case <-deadline:
			t.Fatalf("delivered %d of %d", n, runs)
		}
	}
	stop()
	if len(rcv.got) != runs {
		t.Fatalf("the receiver took %d deliveries, want %d", len(rcv.got), runs)
	}
	rcv.mu.Lock()
	for id, n := range rcv.attempts {
		if n < 3 {
			t.Errorf("delivery %s attempted %d times, want 3 (two refused)", id, n)
		}
	}
	rcv.mu.Unlock()
	if ds := deliveries(t, s, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING); len(ds) != 0 {
		t.Fatalf("%d deliveries left pending", len(ds))
	}
}

// TestWorkerGivesUp: a receiver that always refuses is retried until
// RetryFor passes, then the delivery is kept as failed with its error.
func TestWorkerGivesUp(t *testing.T) {
	s := openStore(t)
	rcv := newReceiver(t, 1<<30)
	endRuns(t, s, 1, rcv.srv.URL)
	var mu sync.Mutex
	outcomes := map[string]int{}
	failed := make(chan struct{})
	stop := startWorker(t, s, []string{hostOf(rcv.srv.URL)}, webhook.Options{RetryFor: 100 * time.Millisecond, Observe: func(o string) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[o]++
		if o == webhook.OutcomeFailed {
			close(failed)
		}
	}})
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never failed")
	}
	stop()
	ds := deliveries(t, s, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED)
	if len(ds) != 1 || !strings.Contains(ds[0].GetLastError(), "503") || int(ds[0].GetAttempts()) != rcv.requests() {
		t.Fatalf("failed deliveries = %v after %d requests", ds, rcv.requests())
	}
	if outcomes[webhook.OutcomeRetry] < 1 || outcomes[webhook.OutcomeDelivered] != 0 {
		t.Fatalf("outcomes = %v", outcomes)
	}
}

// TestWorkerSendsNothingToADisallowedHost: a delivery whose host the
// list does not allow (any more) fails for good, unsent.
func TestWorkerSendsNothingToADisallowedHost(t *testing.T) {
	s := openStore(t)
	rcv := newReceiver(t, 0)
	endRuns(t, s, 1, rcv.srv.URL)
	failed := make(chan struct{}, 1)
	stop := startWorker(t, s, []string{"127.0.0.1:1"}, webhook.Options{Observe: func(o string) {
		if o == webhook.OutcomeFailed {
			failed <- struct{}{}
		}
	}})
	select {
	case <-failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never failed")
	}
	stop()
	if n := rcv.requests(); n != 0 {
		t.Fatalf("%d requests reached a host not allowed", n)
	}
	ds := deliveries(t, s, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED)
	if len(ds) != 1 || !strings.Contains(ds[0].GetLastError(), "not allowed") {
		t.Fatalf("failed deliveries = %v", ds)
	}
}

// TestWorkerSurvivesAPanic: an attempt that panics (here, in Observe) is
// logged, and the worker, in the server's goroutine, goes on with the
// other deliveries instead of stopping the server.
func TestWorkerSurvivesAPanic(t *testing.T) {
	s := openStore(t)
	rcv := newReceiver(t, 0)
	const runs = 3
	endRuns(t, s, runs, rcv.srv.URL+"/hook")
	settled := make(chan string, 10*runs)
	var panicked atomic.Bool
	startWorker(t, s, []string{hostOf(rcv.srv.URL)}, webhook.Options{Parallel: 1, Observe: func(o string) {
		if panicked.CompareAndSwap(false, true) {
			panic("an outcome no check foresaw")
		}
		settled <- o
	}})
	deadline := time.After(30 * time.Second)
	for n := 0; n < runs-1; {
		select {
		case o := <-settled:
			if o == webhook.OutcomeDelivered {
				n++
			}
		case <-deadline:
			t.Fatalf("delivered %d of %d after the panic", n, runs-1)
		}
	}
}
