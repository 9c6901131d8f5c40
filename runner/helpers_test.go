package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

const testApp = "app"

// newTestStore opens a bbolt store on a fresh file.
func newTestStore(t testing.TB) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "agentrunner.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newTestRunner returns a runner for root over a fresh store, and a session
// key created in it.
func newTestRunner(t testing.TB, root agent.Agent) (*Runner, *boltstore.Store, store.SessionKey) {
	t.Helper()
	db := newTestStore(t)
	r, err := New(Config{AppName: testApp, Root: root, Store: db, Memory: memory.NewIndex(db)})
	if err != nil {
		t.Fatal(err)
	}
	return r, db, newSession(t, db, "u1", "s1")
}

func newSession(t testing.TB, db *boltstore.Store, user, id string) store.SessionKey {
	t.Helper()
	k := store.SessionKey{App: testApp, User: user, Session: id}
	if _, err := db.CreateSession(context.Background(), k, nil); err != nil {
		t.Fatal(err)
	}
	return k
}

func request(k store.SessionKey, text string) Request {
	return Request{UserID: k.User, SessionID: k.Session, NewMessage: userText(text)}
}

// result is what a run produced.
type result struct {
	events    []*agentrunnerv1.Event
	agentErrs []*agent.AgentError
	err       error // the terminal error, if any
}

// collect drains a run, checking that a terminal error is the last element.
// The ends the runner stores for custom agents under another (isEnd) are
// left out of events: these tests are about what the agents say, and
// TestCustomAgentEndRecorded (custom_end_test.go) is about those ends.
func collect(t testing.TB, seq iter.Seq2[*agentrunnerv1.Event, error]) result {
	t.Helper()
	var r result
	for ev, err := range seq {
		if r.err != nil {
			t.Fatalf("element after terminal error %v: %v, %v", r.err, ev, err)
		}
		var ae *agent.AgentError
		switch {
		case errors.As(err, &ae):
			r.agentErrs = append(r.agentErrs, ae)
		case err != nil:
			r.err = err
		case !isEnd(ev):
			r.events = append(r.events, ev)
		}
	}
	return r
}

// isEnd reports whether ev is the end the runner stores for a custom
// agent that returned without marking its last event, and nothing more.
func isEnd(ev *agentrunnerv1.Event) bool { return agent.IsEnd(ev) && ev.GetActions() == nil }

// mustRun runs req and fails on a terminal error.
func mustRun(t testing.TB, r *Runner, req Request) result {
	t.Helper()
	res := collect(t, r.Run(t.Context(), req))
	if res.err != nil {
		t.Fatalf("run: %v", res.err)
	}
	return res
}

// summary renders events as "author: text" lines, for comparisons; ends
// are left out, as collect leaves them out.
func summary(events []*agentrunnerv1.Event) []string {
	out := make([]string, 0, len(events))
	for _, ev := range events {
		if isEnd(ev) {
			continue
		}
		s := ev.GetAuthor() + ": " + textOf(ev.GetContent())
		if ev.GetPartial() {
			s += " (partial)"
		}
		out = append(out, s)
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func userText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{textPart(s)}}
}

func modelText(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{textPart(s)}}
}

func say(s string) *agentrunnerv1.Event { return &agentrunnerv1.Event{Content: modelText(s)} }

// mustAgent builds a custom agent that yields the given texts.
func mustAgent(t testing.TB, name string, texts ...string) agent.Agent {
	t.Helper()
	return mustCustom(t, agent.Config{Name: name, Run: sayAll(texts...)})
}

func sayAll(texts ...string) agent.RunFunc {
	return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for _, s := range texts {
				if !yield(say(s), nil) {
					return
				}
			}
		}
	}
}

func mustCustom(t testing.TB, cfg agent.Config) agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// fakeModel is a scripted in-process model. By default it answers
// "<reply> #<n>"; respond overrides that.
type fakeModel struct {
	name    string
	reply   string
	respond func(req *model.Request, call int) ([]*model.Response, error)

	mu       sync.Mutex
	requests []*model.Request
}

func (m *fakeModel) Name() string { return m.name }

func (m *fakeModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.mu.Lock()
		m.requests = append(m.requests, req)
		call := len(m.requests)
		m.mu.Unlock()
		var resps []*model.Response
		var err error
		if m.respond != nil {
			resps, err = m.respond(req, call)
		} else {
			resps = []*model.Response{{Content: modelText(fmt.Sprintf("%s #%d", m.reply, call)), TurnComplete: true, FinishReason: "STOP"}}
		}
		if err != nil {
			yield(nil, err)
			return
		}
		for _, r := range resps {
			if r.Partial && !stream {
				continue
			}
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (m *fakeModel) calls() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.requests...)
}

// llm builds an LLM agent whose model answers "I am <name> #<n>".
func llm(t testing.TB, cfg llmagent.Config) agent.Agent {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = &fakeModel{name: "fake", reply: "I am " + cfg.Name}
	}
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitClosed waits for ch to be closed, failing after a generous bound.
func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// textOf concatenates the non-thought text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// jsonOf renders s as compact JSON with sorted keys.
func jsonOf(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return "{}"
	}
	return string(b)
}

func cloneEvent(ev *agentrunnerv1.Event) *agentrunnerv1.Event { return proto.CloneOf(ev) }

// keySet renders a map's keys in the order given by sortedKeys.
func keySet[V any](m map[string]V) string {
	return "{" + strings.Join(sortedKeys(m), ",") + "}"
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
