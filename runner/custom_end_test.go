package runner_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// unmarked is a workflow of custom agents that do not mark their last
// event turn_complete: a parallel agent of two (left, right), then a last
// one (tail). Each says "<name> said" once per run of its body, counted
// in calls.
func unmarked(calls *modelCalls) func(t *testing.T) runner.Config {
	return func(t *testing.T) runner.Config {
		say := func(name string) agent.Agent {
			return must[agent.Agent](t)(agent.New(agent.Config{Name: name, Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
				return func(yield func(*agentrunnerv1.Event, error) bool) {
					calls.add(name)
					yield(&agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: name + " said"}}}}}, nil)
				}
			}}))
		}
		fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{say("left"), say("right")}}))
		root := must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "custom_root", SubAgents: []agent.Agent{fan, say("tail")}}))
		return runner.Config{Root: root}
	}
}

// dieBefore is a store on which the process "dies" as the first event of
// agent author comes to be stored: that event and every later write are
// lost, as a kill -9 at that moment would leave the file.
type dieBefore struct {
	*boltstore.Store
	author string
	dead   *atomic.Bool
}

func (s dieBefore) dies(ev *agentrunnerv1.Event) bool {
	if ev.GetAuthor() == s.author {
		s.dead.Store(true)
	}
	return s.dead.Load()
}

func (s dieBefore) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if s.dies(ev) {
		return nil, errCrashed
	}
	return s.Store.AppendEvent(ctx, k, ev)
}

func (s dieBefore) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, rec *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if s.dies(ev) {
		return nil, nil, errCrashed
	}
	return s.Store.AppendRunEvent(ctx, k, ev, rec)
}

func (s dieBefore) PutRun(ctx context.Context, rec *agentrunnerv1.Run) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.PutRun(ctx, rec)
}

func (s dieBefore) PutRunLater(rec *agentrunnerv1.Run) {
	if !s.dead.Load() {
		s.Store.PutRunLater(rec)
	}
}

// TestCustomAgentEndRecorded: the runner records a custom agent's end when
// its Run returns (an event of the agent marked turn_complete, empty when
// its last event was not so marked). A run cut by a crash just before the
// agent after a parallel agent of two custom agents stores anything,
// recovered and resumed, runs neither branch again: both had returned, and
// their ends are stored; each answer is stored once, and the rest of the
// workflow runs. On 1dc16e9, and since, nothing said a branch that does not
// mark its last event had ended: both ran again, their answers stored
// twice (issue 45, item 8b).
func TestCustomAgentEndRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	calls := &modelCalls{}
	dead := &atomic.Bool{}
	wrap := func(st *boltstore.Store) runner.Store { return dieBefore{Store: st, author: "tail", dead: dead} }
	f := openFeature(t, path, unmarked(calls)(t), wrap)
	f.session(t, "s1")
	res := f.run(t, ask("s1", "go"))
	if len(res.runs) == 0 || !dead.Load() {
		t.Fatalf("no run record, or tail never spoke: %v", res.err)
	}
	id := res.runs[0].GetRunId()

	f2 := f.restart(t, unmarked(calls)(t))
	before := calls.get()
	if rec := f2.getRun(t, id); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("after the restart the run is %v; want INTERRUPTED", rec.GetStatus())
	}
	resumed := f2.resume(t, runner.ResumeRequest{RunID: id})
	if resumed.err != nil {
		t.Fatalf("Resume: %v", resumed.err)
	}
	if rec := resumed.final(t); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("the resumed run ended %v (%v); want SUCCEEDED", rec.GetStatus(), rec.GetError())
	}
	after := calls.get()
	for name, want := range map[string]int{"left": 0, "right": 0, "tail": 1} {
		if got := after[name] - before[name]; got != want {
			t.Errorf("the resume ran %s %d times; want %d", name, got, want)
		}
	}
	stored, ends := map[string]int{}, map[string]int{}
	for _, ev := range f2.events(t, "s1") {
		if ev.GetContent().GetParts() != nil {
			stored[ev.GetAuthor()]++
		}
		if ev.GetTurnComplete() {
			ends[ev.GetAuthor()]++
		}
	}
	for _, name := range []string{"left", "right", "tail"} {
		if stored[name] != 1 || ends[name] != 1 {
			t.Errorf("%s: %d answers and %d ends stored; want one of each", name, stored[name], ends[name])
		}
	}
}

// TestCustomAgentRunsAgainUnlessEnded: the rule over every cut point of the
// same workflow: a resume runs a custom agent again exactly when neither
// its end nor an event of the agent after it in its sequence was stored
// at the cut, and an agent that had ended has its answer stored once.
func TestCustomAgentRunsAgainUnlessEnded(t *testing.T) {
	// left, right and tail say something and end: six agent events.
	for cut := int32(1); cut < 6; cut++ {
		t.Run(fmt.Sprintf("cut_after_%d", cut), func(t *testing.T) { customCut(t, cut) })
	}
}

func customCut(t *testing.T, cut int32) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	calls := &modelCalls{}
	wrap := func(st *boltstore.Store) runner.Store { return &cutStore{Store: st, after: cut} }
	f := openFeature(t, path, unmarked(calls)(t), wrap)
	f.session(t, "s1")
	res := f.run(t, ask("s1", "go"))
	if len(res.runs) == 0 {
		t.Fatalf("no run record: %v", res.err)
	}
	id := res.runs[0].GetRunId()

	f2 := f.restart(t, unmarked(calls)(t))
	events := func() []*agentrunnerv1.Event { return f2.events(t, "s1") }
	ended, said := map[string]bool{}, map[string]bool{}
	for _, ev := range events() {
		ended[ev.GetAuthor()] = ended[ev.GetAuthor()] || ev.GetTurnComplete()
		said[ev.GetAuthor()] = said[ev.GetAuthor()] || ev.GetContent().GetParts() != nil
	}
	// The branches end with the parallel agent, which ends once tail,
	// after it, stored an event.
	ended["left"] = ended["left"] || said["tail"] || ended["tail"]
	ended["right"] = ended["right"] || said["tail"] || ended["tail"]
	before := calls.get()
	if f2.getRun(t, id).GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		if res := f2.resume(t, runner.ResumeRequest{RunID: id}); res.err != nil {
			t.Fatalf("Resume: %v", res.err)
		}
	} else {
		ended = map[string]bool{"left": true, "right": true, "tail": true} // recovered as ended
	}
	if rec := f2.getRun(t, id); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("the run ended %v (%v); want SUCCEEDED", rec.GetStatus(), rec.GetError())
	}
	after := calls.get()
	stored := map[string]int{}
	for _, ev := range events() {
		if ev.GetContent().GetParts() != nil {
			stored[ev.GetAuthor()]++
		}
	}
	for _, name := range []string{"left", "right", "tail"} {
		want := 1
		if ended[name] {
			want = 0
		}
		if again := after[name] - before[name]; again != want {
			t.Errorf("%s ran %d more times on resume (ended at the cut: %v); want %d", name, again, ended[name], want)
		}
		if ended[name] && stored[name] != 1 {
			t.Errorf("%s ended before the cut, and its answer is stored %d times; want once", name, stored[name])
		}
	}
}
