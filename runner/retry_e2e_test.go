package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/gemini"
	"github.com/agentrunner/agentrunner/runner/model/retry"
	"github.com/agentrunner/agentrunner/store"
)

// noSleep is a retry clock that records waits instead of making them.
type noSleep struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *noSleep) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *noSleep) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// TestModelFaultsKeepTheSession runs three turns on the real Gemini model
// under the retry wrapper: a 503 retried into an answer, a quota that
// stays exhausted (an in-band RESOURCE_EXHAUSTED event, the run itself
// fine), and a turn after it that answers with the whole history: a model
// fault never breaks the session.
func TestModelFaultsKeepTheSession(t *testing.T) {
	quota := httpError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "quota exceeded")
	fake := newFakeGemini(t,
		httpError(http.StatusServiceUnavailable, "UNAVAILABLE", "overloaded"), answer(say("recovered")),
		quota, quota, quota,
		answer(say("back")),
	)
	m, err := retry.New(retry.Config{
		Primary: retry.Target{Model: fake.model(t), Policy: retry.Policy{MaxAttempts: 3}},
		Clock:   &noSleep{},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, llmAgent(t, llmagent.Config{Name: "root", Model: m}))
	wantLines := [][]string{{"root: recovered"}, {"root:  [RESOURCE_EXHAUSTED]"}, {"root: back"}}
	for i, msg := range []string{"hi", "again", "third"} {
		res := h.run(t, t.Context(), userMsg(msg), nil)
		if res.err != nil || len(res.errs) != 0 {
			t.Fatalf("run %d: terminal error %v, in-band errors %v", i, res.err, res.errs)
		}
		if !slices.Equal(res.lines, wantLines[i]) {
			t.Errorf("run %d: lines %q, want %q", i, res.lines, wantLines[i])
		}
	}
	last := fake.seen()
	if len(last) != 6 || fake.unused() != 0 {
		t.Errorf("fake saw %d requests (%d replies unused), want 6", len(last), fake.unused())
	}
	_, events, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, ev := range events {
		stored = append(stored, line(ev))
	}
	want := []string{"user: hi", "root: recovered", "user: again", "root:  [RESOURCE_EXHAUSTED]", "user: third", "root: back"}
	if !slices.Equal(stored, want) {
		t.Errorf("stored %q, want %q", stored, want)
	}
	if msg := events[3].GetErrorMessage(); msg == "" || events[3].GetErrorCode() != model.CodeResourceExhausted {
		t.Errorf("the failed turn's event: %s %q", events[3].GetErrorCode(), msg)
	}
}

// TestHungModelFreesTheSession: a Gemini model whose stream falls silent
// after one chunk does not hold the session until the run's deadline: its
// idle timeout ends the call, the run ends with the answer as far as it
// got and DEADLINE_EXCEEDED, and the session's next run is admitted and
// answered.
func TestHungModelFreesTheSession(t *testing.T) {
	release := make(chan struct{})
	fake := newFakeGemini(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", response([]any{say("Once upon")}, ""))
		w.(http.Flusher).Flush()
		select { // hung: silent until the client goes away or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}, answer(say("back")))
	t.Cleanup(func() { close(release) }) // runs before the fake's Close
	gm, err := gemini.New(t.Context(), modelName, gemini.WithIdleTimeout(100*time.Millisecond),
		gemini.WithClientConfig(genai.ClientConfig{APIKey: "fake-key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: fake.srv.URL}}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := retry.New(retry.Config{Primary: retry.Target{Model: gm}, Clock: &noSleep{}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, llmAgent(t, llmagent.Config{Name: "root", Model: m}))

	// The run's own deadline stands in for --max-run: far longer than the
	// idle timeout, so reaching it means the hang held the session.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sse := &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	res := h.run(t, ctx, userMsg("tell me a story"), sse)
	want := []string{"root: Once upon (partial)", "root: Once upon [DEADLINE_EXCEEDED]"}
	if res.err != nil || !slices.Equal(res.lines, want) {
		t.Fatalf("first run: lines %q, terminal error %v; want %q and no error", res.lines, res.err, want)
	}
	if ev := res.events[len(res.events)-1]; !ev.GetInterrupted() || !strings.Contains(ev.GetErrorMessage(), "idle timeout") {
		t.Errorf("last event: interrupted %v, message %q; want interrupted by the idle timeout", ev.GetInterrupted(), ev.GetErrorMessage())
	}
	res = h.run(t, t.Context(), userMsg("again"), nil)
	if res.err != nil || !slices.Equal(res.lines, []string{"root: back"}) {
		t.Fatalf("next run on the session: lines %q, error %v; want it admitted and answered", res.lines, res.err)
	}
	waitNoGoroutines(t, "agentrunner/runner/model/gemini.", "google.golang.org/genai.")
}
