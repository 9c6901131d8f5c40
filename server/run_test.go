package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// scriptedApp stands in for a runner: it appends the user message and one
// reply per script step to the real store, yielding partial chunks and
// agent errors as the script says, like the runner does.
func scriptedApp(st Store, app string, script ...string) AppRunner {
	return runFunc(func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			k := store.SessionKey{App: app, User: req.UserID, Session: req.SessionID}
			if _, err := st.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "user", Content: req.NewMessage,
				Actions: &agentrunnerv1.EventActions{StateDelta: req.StateDelta}}); err != nil {
				yield(nil, err)
				return
			}
			for _, step := range script {
				var ev *agentrunnerv1.Event
				var err error
				switch step {
				case "partial":
					ev = &agentrunnerv1.Event{Author: "bot", Partial: true, Content: text("chunk")}
				case "agent error":
					err = &agent.AgentError{Agent: "bot", Err: errors.New("tool exploded")}
				default:
					ev, err = st.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "bot", Content: text(step)})
				}
				if !yield(ev, err) {
					return
				}
			}
		}
	})
}

func TestRun(t *testing.T) {
	apps := fakeApps{}
	e := newEnv(t, withApps(apps))
	st := e.store
	apps["chat"] = scriptedApp(st, "chat", "partial", "hello", "agent error", "still here")
	apps["missing-session"] = runFunc(func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			_, _, err := st.GetSession(ctx, store.SessionKey{App: "missing-session", User: req.UserID, Session: req.SessionID}, store.GetOptions{})
			yield(nil, err)
		}
	})
	apps["busy"] = runFunc(func(context.Context, runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			yield(nil, fmt.Errorf("invocation e-42: %w", runner.ErrRunInProgress))
		}
	})
	apps["broken"] = runFunc(func(context.Context, runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if yield(&agentrunnerv1.Event{Author: "bot", Partial: true}, nil) {
				yield(nil, errors.New("bbolt: disk I/O error at /var/lib/x"))
			}
		}
	})
	e.createSession(t, "chat", "u1", "s1")
	msg := text("hi there")

	t.Run("streams events and in-band errors", func(t *testing.T) {
		delta, _ := structpb.NewStruct(map[string]any{"mood": "curious"})
		stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "chat", UserId: "u1", SessionId: "s1", NewMessage: msg, StateDelta: delta})
		if err != nil {
			t.Fatal(err)
		}
		got, err := collectRun(t, stream)
		if err != nil {
			t.Fatalf("Run ended with %v", err)
		}
		var kinds []string
		for _, r := range got {
			switch {
			case r.GetEvent().GetPartial():
				kinds = append(kinds, "partial")
			case r.GetEvent() != nil:
				kinds = append(kinds, r.GetEvent().GetContent().GetParts()[0].GetText())
			case r.GetError() != nil:
				kinds = append(kinds, fmt.Sprintf("error %v", codes.Code(r.GetError().GetCode())))
			}
		}
		if want := "[partial hello error Unknown still here]"; fmt.Sprint(kinds) != want {
			t.Errorf("stream = %v, want %s", kinds, want)
		}
		// Complete events carry their sequence and are in the session.
		if seq := got[1].GetEvent().GetSequence(); seq != 2 {
			t.Errorf("first reply sequence = %d, want 2", seq)
		}
		sess, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "chat", UserId: "u1", SessionId: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(sess.GetEvents()); n != 3 {
			t.Errorf("session has %d events, want 3 (user, hello, still here)", n)
		}
		if got := sess.GetSession().GetState().GetFields()["mood"].GetStringValue(); got != "curious" {
			t.Errorf("state_delta not applied: mood = %q", got)
		}
	})

	tests := []struct {
		name  string
		req   *servicev1.RunRequest
		code  codes.Code
		field string
	}{
		{"unknown app", &servicev1.RunRequest{AppName: "nope", UserId: "u1", SessionId: "s1", NewMessage: msg}, codes.NotFound, ""},
		{"missing session", &servicev1.RunRequest{AppName: "missing-session", UserId: "u1", SessionId: "s9", NewMessage: msg}, codes.NotFound, ""},
		{"run in progress", &servicev1.RunRequest{AppName: "busy", UserId: "u1", SessionId: "s1", NewMessage: msg}, codes.Aborted, ""},
		{"storage failure", &servicev1.RunRequest{AppName: "broken", UserId: "u1", SessionId: "s1", NewMessage: msg}, codes.Internal, ""},
		{"no message", &servicev1.RunRequest{AppName: "chat", UserId: "u1", SessionId: "s1"}, codes.InvalidArgument, "new_message"},
		{"no parts", &servicev1.RunRequest{AppName: "chat", UserId: "u1", SessionId: "s1", NewMessage: &agentrunnerv1.Content{Role: "user"}}, codes.InvalidArgument, "new_message.parts"},
		{"no user", &servicev1.RunRequest{AppName: "chat", SessionId: "s1", NewMessage: msg}, codes.InvalidArgument, "user_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream, err := e.runner.Run(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			_, err = collectRun(t, stream)
			wantCode(t, err, tc.code, tc.field)
		})
	}
	t.Run("unknown app names the app", func(t *testing.T) {
		stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "nope", UserId: "u1", SessionId: "s1", NewMessage: msg})
		if err != nil {
			t.Fatal(err)
		}
		_, err = collectRun(t, stream)
		if m := statusMessage(err); m == "" || !strings.Contains(m, `"nope"`) {
			t.Errorf("message %q does not name the app", m)
		}
	})
	t.Run("internal detail is logged, not returned", func(t *testing.T) {
		if !strings.Contains(e.logs.String(), "disk I/O error") {
			t.Errorf("storage failure not logged:\n%s", e.logs)
		}
	})
}

// TestRunClientCancel checks that a client that cancels its Run cancels the
// runner's context, and that the runner stops.
func TestRunClientCancel(t *testing.T) {
	testCtx := t.Context()
	started := make(chan struct{})
	stopped := make(chan error, 1)
	apps := fakeApps{"slow": runFunc(func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(&agentrunnerv1.Event{Author: "bot", Partial: true, Content: text("thinking")}, nil) {
				stopped <- errors.New("consumer stopped before cancellation")
				return
			}
			close(started)
			// A model call that only ends when cancelled. The test's own
			// context is a backstop, so that a broken server fails the test
			// instead of hanging it.
			select {
			case <-ctx.Done():
			case <-testCtx.Done():
			}
			stopped <- ctx.Err()
			yield(nil, ctx.Err())
		}
	})}
	e := newEnv(t, withApps(apps))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.runner.Run(ctx, &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "s", NewMessage: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nextEvent(stream); err != nil {
		t.Fatalf("first event: %v", err)
	}
	<-started
	cancel()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("runner stopped with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runner context was not cancelled within 10s of the client cancelling")
	}
	_, err = stream.Recv()
	wantCode(t, err, codes.Canceled, "")
}

// TestRunMaxDuration checks that the server's limit on a run cancels the
// runner with DeadlineExceeded.
func TestRunMaxDuration(t *testing.T) {
	apps := fakeApps{"slow": runFunc(func(ctx context.Context, req runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			<-ctx.Done()
			yield(nil, fmt.Errorf("model call: %w", ctx.Err()))
		}
	})}
	e := newEnv(t, withApps(apps), func(c *Config) { c.MaxRunDuration = 50 * time.Millisecond })
	stream, err := e.runner.Run(t.Context(), &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "s", NewMessage: text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collectRun(t, stream)
	wantCode(t, err, codes.DeadlineExceeded, "")
}

func TestListApps(t *testing.T) {
	noop := runFunc(func(context.Context, runner.Request) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(func(*agentrunnerv1.Event, error) bool) {}
	})
	e := newEnv(t, withApps(fakeApps{"zeta": noop, "alpha": noop, "mid": noop}))
	resp, err := e.runner.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range resp.GetApps() {
		names = append(names, a.GetName())
	}
	if fmt.Sprint(names) != "[alpha mid zeta]" {
		t.Errorf("ListApps = %v, want sorted [alpha mid zeta]", names)
	}

	empty := newEnv(t)
	resp, err = empty.runner.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil || len(resp.GetApps()) != 0 {
		t.Errorf("ListApps without apps = %v, %v; want empty", resp, err)
	}
}
