package runner_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// errCrashed is what a cutStore answers once it has "died".
var errCrashed = errors.New("test: the process died")

// cutStore is a store on which the process "dies" once a given number of
// agent events are stored: every later write fails, so that the file
// holds what a kill -9 at that moment would leave (the run RUNNING).
type cutStore struct {
	*boltstore.Store
	after  int32
	stored atomic.Int32
	cut    atomic.Bool
}

func (s *cutStore) note(ev *agentrunnerv1.Event) {
	if ev.GetAuthor() != agent.UserAuthor && s.stored.Add(1) == s.after {
		s.cut.Store(true)
	}
}

func (s *cutStore) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if s.cut.Load() {
		return nil, errCrashed
	}
	stored, err := s.Store.AppendEvent(ctx, k, ev)
	if err == nil {
		s.note(ev)
	}
	return stored, err
}

func (s *cutStore) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if s.cut.Load() {
		return nil, nil, errCrashed
	}
	stored, rec, err := s.Store.AppendRunEvent(ctx, k, ev, run)
	if err == nil {
		s.note(ev)
	}
	return stored, rec, err
}

func (s *cutStore) PutRun(ctx context.Context, rec *agentrunnerv1.Run) error {
	if s.cut.Load() {
		return errCrashed
	}
	return s.Store.PutRun(ctx, rec)
}

// modelCalls counts model calls per agent.
type modelCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *modelCalls) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *modelCalls) get() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// passModel answers as agent name: "<name> answered #k", k one more than
// its answers the request already holds (a loop's second pass answers #2),
// so that the same answer stored twice shows. transferTo, when set, makes
// its first answer a transfer to that agent.
type passModel struct {
	name, transferTo string
	calls            *modelCalls
}

func (m passModel) Name() string { return "pass-" + m.name }

func (m passModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.calls.add(m.name)
		if m.transferTo != "" {
			yield(&model.Response{Content: transferCall(m.transferTo, ""), TurnComplete: true, FinishReason: "STOP"}, nil)
			return
		}
		k := 1
		for _, c := range req.Contents {
			for _, p := range c.GetParts() {
				k += strings.Count(p.GetText(), m.name+" answered #")
			}
		}
		yield(&model.Response{Content: userContent(fmt.Sprintf("%s answered #%d", m.name, k)), TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// replayApp is a workflow app for the resume tests, with the model calls
// and the answers one run makes.
type replayApp struct {
	name    string
	build   func(t *testing.T, calls *modelCalls) agent.Agent
	calls   map[string]int // model calls of one run, per agent
	answers []string       // answer texts of one run, each stored once
}

func replayApps() []replayApp {
	llm := func(t *testing.T, calls *modelCalls, name, to string, subs ...agent.Agent) agent.Agent {
		return must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: name, Model: passModel{name: name, transferTo: to, calls: calls}, SubAgents: subs}))
	}
	return []replayApp{{
		name: "par",
		build: func(t *testing.T, c *modelCalls) agent.Agent {
			par := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{llm(t, c, "left", ""), llm(t, c, "right", "")}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "par_root", SubAgents: []agent.Agent{llm(t, c, "first", ""), par, llm(t, c, "last", "")}}))
		},
		calls:   map[string]int{"first": 1, "left": 1, "right": 1, "last": 1},
		answers: []string{"first answered #1", "left answered #1", "right answered #1", "last answered #1"},
	}, {
		name: "loop",
		build: func(t *testing.T, c *modelCalls) agent.Agent {
			loop := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "passes", MaxIterations: 2, SubAgents: []agent.Agent{llm(t, c, "draft", ""), llm(t, c, "review", "")}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "loop_root", SubAgents: []agent.Agent{loop, llm(t, c, "wrap", "")}}))
		},
		calls:   map[string]int{"draft": 2, "review": 2, "wrap": 1},
		answers: []string{"draft answered #1", "review answered #1", "draft answered #2", "review answered #2", "wrap answered #1"},
	}, {
		name: "xfer",
		build: func(t *testing.T, c *modelCalls) agent.Agent {
			router := llm(t, c, "router", "helper", llm(t, c, "helper", ""))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "xfer_root", SubAgents: []agent.Agent{router, llm(t, c, "tail", "")}}))
		},
		calls:   map[string]int{"router": 1, "helper": 1, "tail": 1},
		answers: []string{"helper answered #1", "tail answered #1"},
	}}
}

// TestResumeGoesOnWhereCut: a run of a workflow app (parallel, loop,
// transfer) cut by a crash after any of its stored agent events, then
// recovered and resumed, ends SUCCEEDED with every agent's answer stored
// exactly once and no model called more than the run needs: no finished
// agent runs again, and the rest of the workflow runs.
func TestResumeGoesOnWhereCut(t *testing.T) {
	for _, app := range replayApps() {
		t.Run(app.name, func(t *testing.T) {
			events := 0
			for _, n := range app.calls {
				events += n
			}
			if app.name == "xfer" {
				events++ // the transfer's call and its response are two events
			}
			for cut := 1; cut < events; cut++ {
				t.Run(fmt.Sprintf("cut_after_%d", cut), func(t *testing.T) { resumeAfterCut(t, app, int32(cut)) })
			}
		})
	}
}

func resumeAfterCut(t *testing.T, app replayApp, cut int32) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	calls := &modelCalls{}
	wrap := func(st *boltstore.Store) runner.Store { return &cutStore{Store: st, after: cut} }
	f := openFeature(t, path, runner.Config{Root: app.build(t, calls)}, wrap)
	f.session(t, "s1")
	res := f.run(t, ask("s1", "go"))
	if len(res.runs) == 0 {
		t.Fatalf("no run record: %v", res.err)
	}
	id := res.runs[0].GetRunId()

	f2 := f.restart(t, runner.Config{Root: app.build(t, calls)})
	getSession := func() []*agentrunnerv1.Event { return f2.events(t, "s1") }
	// What the models answered before the cut is stored: the resume must
	// call each model only for what is missing. (The process "died" at
	// the cut, though the run went on in memory: its later calls do not
	// count.)
	want := map[string]int{}
	for name, n := range app.calls {
		want[name] = n - modelAnswers(getSession(), name)
	}
	before := calls.get()
	rec := f2.getRun(t, id)
	for range 2 {
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED && rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			break
		}
		// A call cut between its start and its result waits for the
		// caller's word (INPUT_REQUIRED): it is retried.
		res := f2.resume(t, runner.ResumeRequest{RunID: id, RetryCallIDs: rec.GetPendingCallIds()})
		if res.err != nil {
			t.Fatalf("Resume: %v", res.err)
		}
		rec = res.final(t)
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("the run ended %v (%v); want SUCCEEDED", rec.GetStatus(), rec.GetError())
	}
	stored := map[string]int{}
	var texts []string
	for _, ev := range getSession() {
		if ev.GetAuthor() == agent.UserAuthor {
			continue
		}
		for _, p := range ev.GetContent().GetParts() {
			if p.GetText() != "" {
				stored[p.GetText()]++
				texts = append(texts, ev.GetAuthor()+": "+p.GetText())
			}
		}
	}
	for _, a := range app.answers {
		if stored[a] != 1 {
			t.Errorf("%q stored %d times; want once (stored: %q)", a, stored[a], texts)
		}
	}
	after := calls.get()
	for name, n := range want {
		if got := after[name] - before[name]; got != n {
			t.Errorf("the resume called agent %s's model %d times; want %d, for the answers missing at the cut (stored: %q)", name, got, n, texts)
		}
	}
}

// modelAnswers counts the stored events of agent name that a model
// answered: text or calls, not tool results.
func modelAnswers(events []*agentrunnerv1.Event, name string) int {
	n := 0
	for _, ev := range events {
		if ev.GetAuthor() != name {
			continue
		}
		for _, p := range ev.GetContent().GetParts() {
			if p.GetText() != "" || p.GetFunctionCall() != nil {
				n++
				break
			}
		}
	}
	return n
}
