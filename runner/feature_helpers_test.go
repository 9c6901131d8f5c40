package runner_test

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/types/known/structpb"
)

// The feature tests of the runner and its agents (those that use feature)
// were written against the gRPC server, the only harness there was
// (issue 50, item 5). They drive a Runner over a real bbolt file
// through its Go API instead: what a reader of Stream gets is what a Run
// stream carried, less the wire.

// featureApp and featureUser name the app and the user of every session
// of the feature tests.
const (
	featureApp  = "app"
	featureUser = "u1"
)

// feature is one app's Runner over a bbolt file.
type feature struct {
	store *boltstore.Store
	r     *runner.Runner
	path  string
	close func() // the runner's plugins and the store, once
}

// newFeature serves cfg (its Root, Plugins, Compaction…) on a fresh bbolt
// file. AppName, Store and Memory are filled in.
func newFeature(t *testing.T, cfg runner.Config) *feature {
	t.Helper()
	return openFeature(t, filepath.Join(t.TempDir(), "agentrunner.db"), cfg, nil)
}

// openFeature serves cfg on the bbolt file at path; its runner uses the
// store wrap returns when wrap is not nil (to inject a crash). Memory
// searches the same file, as the server's runners do.
func openFeature(t *testing.T, path string, cfg runner.Config, wrap func(*boltstore.Store) runner.Store) *feature {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AppName = featureApp
	cfg.Store = st
	if wrap != nil {
		cfg.Store = wrap(st)
	}
	cfg.Memory = memory.NewIndex(st)
	r, err := runner.New(cfg)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	f := &feature{store: st, r: r, path: path}
	f.close = sync.OnceFunc(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("close runner: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	t.Cleanup(f.close)
	return f
}

// restart closes f, as a process that died after its last write would
// leave the file, and serves cfg on the same file after recovering the
// runs left there, as a server does at start.
func (f *feature) restart(t *testing.T, cfg runner.Config) *feature {
	t.Helper()
	f.close()
	next := openFeature(t, f.path, cfg, nil)
	if _, _, err := next.r.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	return next
}

// session creates the session id of featureUser.
func (f *feature) session(t *testing.T, id string) store.SessionKey {
	t.Helper()
	k := store.SessionKey{App: featureApp, User: featureUser, Session: id}
	if _, err := f.store.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	return k
}

// events returns every stored event of session id.
func (f *feature) events(t *testing.T, id string) []*agentrunnerv1.Event {
	t.Helper()
	_, evs, err := f.store.GetSession(t.Context(), store.SessionKey{App: featureApp, User: featureUser, Session: id}, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// getRun returns the record of run id.
func (f *feature) getRun(t *testing.T, id string) *agentrunnerv1.Run {
	t.Helper()
	rec, err := f.r.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return rec
}

// run streams req to its end.
func (f *feature) run(t *testing.T, req runner.Request) outcome {
	t.Helper()
	return read(f.r.Stream(t.Context(), req))
}

// resume streams the resumed run to its end.
func (f *feature) resume(t *testing.T, req runner.ResumeRequest) outcome {
	t.Helper()
	return read(f.r.Resume(t.Context(), req))
}

// ask is featureUser's message msg to session.
func ask(session, msg string) runner.Request {
	return runner.Request{UserID: featureUser, SessionID: session, NewMessage: userContent(msg)}
}

// streamed is ask with the model's answer streamed in partial events.
func streamed(session, msg string) runner.Request {
	req := ask(session, msg)
	req.Config = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	return req
}

// outcome is a run's stream as its reader saw it.
type outcome struct {
	runs    []*agentrunnerv1.Run   // the first record and the last
	events  []*agentrunnerv1.Event // partial and complete
	errs    []string               // the in-band errors' messages
	kinds   []string               // "author: text" per complete event, "partial", "error"
	answers []string               // authors of complete non-user events
	err     error                  // the terminal error, if any
}

// read drains a run stream. The empty end the runner stores for a custom
// agent under another that did not mark its last event is left out: these
// tests are about what agents say (TestCustomAgentEndRecorded is about
// the ends).
func read(seq iter.Seq2[runner.Update, error]) outcome {
	var o outcome
	for u, err := range seq {
		switch {
		case err != nil:
			o.err = err
		case u.Run != nil:
			o.runs = append(o.runs, u.Run)
		case u.Err != nil:
			o.errs = append(o.errs, agentMessage(u.Err))
			o.kinds = append(o.kinds, "error")
		case u.Event.GetPartial():
			o.events = append(o.events, u.Event)
			o.kinds = append(o.kinds, "partial")
		case agent.IsEnd(u.Event) && u.Event.GetActions() == nil:
		default:
			o.events = append(o.events, u.Event)
			o.kinds = append(o.kinds, kind(u.Event))
			if u.Event.GetAuthor() != agent.UserAuthor {
				o.answers = append(o.answers, u.Event.GetAuthor())
			}
		}
	}
	return o
}

// agentMessage is the message of an in-band error as a Run stream
// carries it: the agent's error, naming the agent.
func agentMessage(err error) string {
	var ae *agent.AgentError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	return err.Error()
}

// kind renders a complete event as "author: text", a call as "call
// name" and a call's response as "response name".
func kind(ev *agentrunnerv1.Event) string {
	var text []string
	for _, p := range ev.GetContent().GetParts() {
		switch {
		case p.GetText() != "":
			text = append(text, p.GetText())
		case p.GetFunctionCall() != nil:
			text = append(text, "call "+p.GetFunctionCall().GetName())
		case p.GetFunctionResponse() != nil:
			text = append(text, "response "+p.GetFunctionResponse().GetName())
		}
	}
	return ev.GetAuthor() + ": " + strings.Join(text, " ")
}

// final is the record the run ended with.
func (o outcome) final(t *testing.T) *agentrunnerv1.Run {
	t.Helper()
	if len(o.runs) < 2 {
		t.Fatalf("stream carried %d run records, want the first and the last (error %v)", len(o.runs), o.err)
	}
	return o.runs[len(o.runs)-1]
}

// userContent is a text in the user's role. The feature models answer
// with it too, as they did over gRPC: the runner stores an answer in its
// agent's name whatever role it carries.
func userContent(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// saying is an agent's event saying s.
func saying(s string) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}}
}

// must returns a function that fails t on an error and returns the value.
func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// transferCall is a model's answer handing over to the agent named to,
// with call id (empty: the runner numbers it).
func transferCall(to, id string) *agentrunnerv1.Content {
	args, _ := structpb.NewStruct(map[string]any{"agent_name": to})
	return &agentrunnerv1.Content{Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
		FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: "transfer_to_agent", Args: args}}}}}
}
