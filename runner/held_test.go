package runner

import (
	"context"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
)

// commitCounter counts the store's commits of a run: events appended
// and records written.
type commitCounter struct {
	Store
	mu     sync.Mutex
	writes []string
}

func (c *commitCounter) note(w string) {
	c.mu.Lock()
	c.writes = append(c.writes, w)
	c.mu.Unlock()
}

func (c *commitCounter) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	c.note("event")
	return c.Store.AppendEvent(ctx, k, ev)
}

func (c *commitCounter) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	c.note("event+" + run.GetStatus().String())
	return c.Store.AppendRunEvent(ctx, k, ev, run)
}

func (c *commitCounter) PutRun(ctx context.Context, run *agentrunnerv1.Run) error {
	c.note(run.GetStatus().String())
	return c.Store.PutRun(ctx, run)
}

func (c *commitCounter) taken() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.writes
	c.writes = nil
	return out
}

// TestFinalAnswerCommitsWithRecord: a run whose answer visibly ends it
// (a final answer that completes the tree) costs two commits, the user's
// message with the running record and the answer with the final record,
// not three; the stored record ends at the answer and counts its usage.
// An answer that does not end the tree (a sequential agent's first
// child) is stored at once, as before.
func TestFinalAnswerCommitsWithRecord(t *testing.T) {
	cases := []struct {
		name string
		root func(t *testing.T) agent.Agent
		want []string
	}{
		{"llm answer", func(t *testing.T) agent.Agent { return llm(t, llmagent.Config{Name: "root"}) },
			[]string{"event+RUN_STATUS_RUNNING", "event+RUN_STATUS_SUCCEEDED"}},
		{"sequence", func(t *testing.T) agent.Agent {
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "root", SubAgents: []agent.Agent{
				llm(t, llmagent.Config{Name: "first"}), llm(t, llmagent.Config{Name: "second"})}}))
		}, []string{"event+RUN_STATUS_RUNNING", "event", "event+RUN_STATUS_SUCCEEDED"}},
		{"no turn_complete", func(t *testing.T) agent.Agent { return mustAgent(t, "root", "one") },
			[]string{"event+RUN_STATUS_RUNNING", "event", "RUN_STATUS_SUCCEEDED"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, db, k := newTestRunner(t, c.root(t))
			cc := &commitCounter{Store: db}
			r.store, r.config().env.Store = cc, cc
			var final *agentrunnerv1.Run
			var last *agentrunnerv1.Event
			for u, err := range r.Stream(t.Context(), request(k, "hi")) {
				if err != nil {
					t.Fatal(err)
				}
				if u.Run != nil {
					final = u.Run
				}
				if u.Event != nil {
					last = u.Event
				}
			}
			if got := cc.taken(); !equalStrings(got, c.want) {
				t.Errorf("commits %q, want %q", got, c.want)
			}
			stored, err := db.GetRun(t.Context(), final.GetRunId())
			if err != nil {
				t.Fatal(err)
			}
			if stored.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || stored.GetLastSequence() != last.GetSequence() || last.GetSequence() == 0 {
				t.Errorf("stored record %v at %d; want SUCCEEDED at the answer, %d", stored.GetStatus(), stored.GetLastSequence(), last.GetSequence())
			}
			if final.GetLastSequence() != stored.GetLastSequence() {
				t.Errorf("streamed final record ends at %d, stored at %d", final.GetLastSequence(), stored.GetLastSequence())
			}
		})
	}
}

// TestHeldUnderSummarizer: an app with a summarizer (every app with an
// LLM agent has one) still stores a final answer with its final record,
// unless this run compacts: then the answer is stored first, so that the
// summarizer reads it, and the compaction event after it.
func TestHeldUnderSummarizer(t *testing.T) {
	db := newTestStore(t)
	r, err := New(Config{AppName: testApp, Root: llm(t, llmagent.Config{Name: "root"}), Store: db,
		Compaction: Compaction{Summarizer: offline.New(offline.Config{}), Interval: 2}})
	if err != nil {
		t.Fatal(err)
	}
	k := newSession(t, db, "u1", "s1")
	cc := &commitCounter{Store: db}
	r.store, r.config().env.Store = cc, cc
	wants := [][]string{
		{"event+RUN_STATUS_RUNNING", "event+RUN_STATUS_SUCCEEDED"},             // one run: nothing to compact
		{"event+RUN_STATUS_RUNNING", "event", "event", "RUN_STATUS_SUCCEEDED"}, // two: the answer, then the compaction
	}
	for i, want := range wants {
		var final *agentrunnerv1.Run
		for u, err := range r.Stream(t.Context(), request(k, "hi")) {
			if err != nil {
				t.Fatal(err)
			}
			if u.Run != nil {
				final = u.Run
			}
		}
		if got := cc.taken(); !equalStrings(got, want) {
			t.Errorf("run %d: commits %q, want %q", i+1, got, want)
		}
		if final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("run %d ended %v", i+1, final.GetStatus())
		}
	}
	_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if c := last.GetActions().GetCompaction(); c == nil || c.GetEndSequence() != events[len(events)-2].GetSequence() {
		t.Fatalf("last event %v; want a compaction through the answer before it", last)
	}
}

// TestHeldAnswerStoredBeforeCancel: an answer held for the final record
// is stored, in order and seen by the reader, when the run is cancelled
// after it instead of ending with it.
func TestHeldAnswerStoredBeforeCancel(t *testing.T) {
	waiting := make(chan struct{})
	root := llm(t, llmagent.Config{Name: "root", AfterAgentCallbacks: []agent.AfterAgentCallback{func(ctx agent.CallbackContext) (*agentrunnerv1.Content, error) {
		close(waiting) // the answer is held by now
		<-ctx.Done()
		return nil, nil
	}}})
	r, db, k := newTestRunner(t, root)
	ctx := t.Context()
	var seen []*agentrunnerv1.Event
	var final *agentrunnerv1.Run
	done := make(chan struct{})
	go func() {
		defer close(done)
		req := request(k, "hi")
		req.OnDisconnect = agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE
		for u, err := range r.Stream(ctx, req) {
			if err != nil {
				return // the cancellation's terminal error
			}
			if u.Event != nil {
				seen = append(seen, u.Event)
			}
			if u.Run != nil {
				final = u.Run
			}
		}
	}()
	waitClosed(t, waiting, "the answer held and the callback waiting")
	runs, _, err := r.ListRuns(ctx, k.User, k.Session, store.Page{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	if _, err := r.Cancel(ctx, runs[0].GetRunId()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, done, "the stream's end")
	_, events, err := db.GetSession(ctx, k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events {
		got = append(got, ev.GetAuthor()+":"+ev.GetErrorCode()+":"+firstText(ev))
	}
	want := []string{"user::hi", "root::I am root #1", "root:CANCELLED:"}
	if !equalStrings(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if len(seen) < 2 || firstText(seen[0]) != "I am root #1" || seen[0].GetSequence() != events[1].GetSequence() {
		t.Errorf("the reader saw %v; want the stored answer first", seen)
	}
	if final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || final.GetLastSequence() != events[2].GetSequence() {
		t.Errorf("final record %v at %d, want CANCELLED at %d", final.GetStatus(), final.GetLastSequence(), events[2].GetSequence())
	}
}

func firstText(ev *agentrunnerv1.Event) string {
	for _, p := range ev.GetContent().GetParts() {
		if p.GetText() != "" {
			return p.GetText()
		}
	}
	return ""
}
