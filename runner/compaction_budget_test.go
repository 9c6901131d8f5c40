package runner

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
)

// countedModel counts its inner model's calls.
type countedModel struct {
	model.Model
	calls *atomic.Int32
}

func (m countedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	m.calls.Add(1)
	return m.Model.Generate(ctx, req, stream)
}

// TestCompactionWithinBudget: the summarizer is not called once the run's
// budget is reached (the run's answer reached it): the run still
// succeeds, and no compaction is stored. With budget left, the same
// sessions compact.
func TestCompactionWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tokens    int64
		summaries bool
	}{
		{"reached", 1, false},
		{"left", 1 << 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newTestStore(t)
			var calls atomic.Int32
			r, err := New(Config{AppName: testApp, Root: llm(t, llmagent.Config{Name: "root", Model: offline.New(offline.Config{})}), Store: db,
				Budgets:    Budgets{Run: BudgetLimit{Tokens: tc.tokens}},
				Compaction: Compaction{Summarizer: countedModel{offline.New(offline.Config{}), &calls}, Interval: 1}})
			if err != nil {
				t.Fatal(err)
			}
			k := newSession(t, db, "u1", "s1")
			for i := range 3 {
				var final *agentrunnerv1.Run
				for u, err := range r.Stream(t.Context(), request(k, "hi")) {
					if err != nil {
						t.Fatal(err)
					}
					if u.Run != nil {
						final = u.Run
					}
				}
				if final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
					t.Fatalf("run %d ended %v", i+1, final.GetStatus())
				}
			}
			_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			compactions := 0
			for _, ev := range events {
				if ev.GetActions().GetCompaction() != nil {
					compactions++
				}
			}
			if got := calls.Load() > 0; got != tc.summaries || (compactions > 0) != tc.summaries {
				t.Fatalf("%d summarizer calls, %d compactions stored; want some: %v", calls.Load(), compactions, tc.summaries)
			}
		})
	}
}
