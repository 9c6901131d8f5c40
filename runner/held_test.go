package runner

import (
	"context"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
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
			r.store, r.env.Store = cc, cc
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
