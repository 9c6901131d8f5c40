package plugin

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
)

type named string

func (n named) Name() string { return string(n) }

// answering answers before_model with its name, or fails, or panics.
type answering struct {
	name  string
	calls *[]string
	fail  error
	panic bool
}

func (a answering) Name() string { return a.name }

func (a answering) BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error) {
	*a.calls = append(*a.calls, a.name)
	switch {
	case a.panic:
		panic("hook bug")
	case a.fail != nil:
		return nil, a.fail
	}
	return &model.Response{Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: a.name}}}}}, nil
}

// quiet implements before_model and returns nothing.
type quiet struct {
	name  string
	calls *[]string
}

func (q quiet) Name() string { return q.name }

func (q quiet) BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error) {
	*q.calls = append(*q.calls, q.name)
	return nil, nil
}

func TestNewManagerChecksPlugins(t *testing.T) {
	tests := []struct {
		name    string
		plugins []Plugin
		want    string
	}{
		{name: "nil", plugins: []Plugin{nil}, want: "plugin 0 is nil"},
		{name: "no name", plugins: []Plugin{named("")}, want: "has no name"},
		{name: "duplicate", plugins: []Plugin{named("a"), named("a")}, want: `duplicate plugin name "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewManager(tc.plugins, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	m, err := NewManager([]Plugin{named("a"), named("b")}, nil)
	if err != nil || m.Len() != 2 || m.Plugins()[1].Name() != "b" {
		t.Fatalf("manager %v, %v", m, err)
	}
}

// TestFirstAnswerWins checks the chain: plugins in order, the first that
// answers (or fails) ends it, and a failure or panic names the plugin and
// the hook.
func TestFirstAnswerWins(t *testing.T) {
	var calls []string
	tests := []struct {
		name      string
		plugins   []Plugin
		wantText  string
		wantErr   string
		wantCalls []string
	}{
		{name: "quiet then answer", plugins: []Plugin{quiet{"q", &calls}, answering{name: "a", calls: &calls}, answering{name: "b", calls: &calls}},
			wantText: "a", wantCalls: []string{"q", "a"}},
		{name: "error stops the chain", plugins: []Plugin{answering{name: "bad", calls: &calls, fail: errors.New("no")}, answering{name: "b", calls: &calls}},
			wantErr: "plugin bad before_model: no", wantCalls: []string{"bad"}},
		{name: "panic is an error", plugins: []Plugin{answering{name: "buggy", calls: &calls, panic: true}, answering{name: "b", calls: &calls}},
			wantErr: "plugin buggy before_model: plugin buggy before_model panicked: hook bug", wantCalls: []string{"buggy"}},
		{name: "nobody answers", plugins: []Plugin{quiet{"q1", &calls}, quiet{"q2", &calls}}, wantCalls: []string{"q1", "q2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			m, err := NewManager(tc.plugins, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.BeforeModel(nil, &model.Request{})
			if got := strings.Join(calls, ","); got != strings.Join(tc.wantCalls, ",") {
				t.Errorf("called %q, want %q", calls, tc.wantCalls)
			}
			if tc.wantErr != "" {
				var pe *Error
				if !errors.As(err, &pe) || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := respText(resp); got != tc.wantText {
				t.Fatalf("answer %q, want %q", got, tc.wantText)
			}
		})
	}
}

func TestNilManagerHasNoHooks(t *testing.T) {
	var m *Manager
	if c, err := m.BeforeAgent(nil); c != nil || err != nil {
		t.Fatal("before_agent")
	}
	if r, err := m.OnToolError(nil, nil, nil, errors.New("x")); r != nil || err != nil {
		t.Fatal("on_tool_error")
	}
	if m.Len() != 0 || m.HasBeforeModel() || m.Close(t.Context()) != nil {
		t.Fatal("a nil manager has plugins")
	}
}

// closing closes when released, and reports its error.
type closing struct {
	name    string
	release chan struct{}
	err     error
}

func (c closing) Name() string { return c.name }

func (c closing) Close(context.Context) error {
	<-c.release
	return c.err
}

func TestCloseWaitsBoundedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := closing{name: "fast", release: make(chan struct{}), err: errors.New("flush failed")}
		close(fast.release)
		slow := closing{name: "slow", release: make(chan struct{})}
		m, err := NewManager([]Plugin{fast, slow}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err = m.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("close returned %v after %v; want the deadline after 5s", err, time.Since(start))
		}
		close(slow.release) // let the straggler go, so the bubble ends clean

		m, err = NewManager([]Plugin{closing{name: "fast", release: fast.release, err: fast.err}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Close(t.Context()); err == nil || err.Error() != "plugin fast close: flush failed" {
			t.Fatalf("close error %v", err)
		}
	})
}

func respText(r *model.Response) string {
	if r == nil {
		return ""
	}
	var s []string
	for _, p := range r.Content.GetParts() {
		s = append(s, p.GetText())
	}
	return strings.Join(s, "")
}

// observer reads model requests only.
type observer struct{ name string }

func (o observer) Name() string { return o.name }
func (observer) BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error) {
	return nil, nil
}
func (observer) ObservesRequestsOnly() {}

// TestHasBeforeModelIgnoresObservers: only a before_model hook that may
// change the request makes the LLM agent copy the history; observers
// (telemetry) do not.
func TestHasBeforeModelIgnoresObservers(t *testing.T) {
	obs, err := NewManager([]Plugin{observer{"o1"}, observer{"o2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obs.HasBeforeModel() {
		t.Fatal("observers alone make the agent copy requests")
	}
	mixed, err := NewManager([]Plugin{observer{"o1"}, changer{name: "c"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !mixed.HasBeforeModel() {
		t.Fatal("a hook that may change the request does not make the agent copy it")
	}
}

// changer is a before_model hook without the observer mark.
type changer struct{ name string }

func (c changer) Name() string { return c.name }
func (changer) BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error) {
	return nil, nil
}

// eventSeen records the events its on_event hook is called with.
type eventSeen struct {
	name  string
	calls *[]string
}

func (e eventSeen) Name() string { return e.name }

func (e eventSeen) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	kind := "complete"
	if ev.GetPartial() {
		kind = "partial"
	}
	*e.calls = append(*e.calls, e.name+":"+kind)
	return nil, nil
}

// completeSeen is eventSeen for complete events only.
type completeSeen struct{ eventSeen }

func (completeSeen) CompleteEventsOnly() {}

// TestCompleteEventHooks: a hook marked CompleteEventHook is not called
// for partial events, but is for complete ones, in the plugins' order;
// the other hooks see both; and partial events skip the manager's hooks
// at once when only such hooks are there (the served apps' logging).
func TestCompleteEventHooks(t *testing.T) {
	var calls []string
	m, err := NewManager([]Plugin{completeSeen{eventSeen{"counts", &calls}}, eventSeen{"all", &calls}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, partial := range []bool{true, false} {
		if _, err := m.OnEvent(nil, &agentrunnerv1.Event{Partial: partial}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(calls, ","), "all:partial,counts:complete,all:complete"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	only, err := NewManager([]Plugin{NewLogging(slog.New(slog.DiscardHandler)), completeSeen{eventSeen{"counts", &calls}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(only.partial) != 0 || len(only.event) != 2 {
		t.Fatalf("%d hooks for partial events and %d for complete ones, want 0 and 2", len(only.partial), len(only.event))
	}
}
