package runner_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
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
