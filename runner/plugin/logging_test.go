package plugin

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// runContext is the context run-level hooks get, for a run of id.
func runContext(t *testing.T, ctx context.Context, id string) agent.InvocationContext {
	t.Helper()
	a, err := agent.New(agent.Config{Name: "root", Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(func(*agentrunnerv1.Event, error) bool) {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	inv := agent.NewInvocation(agent.InvocationConfig{Session: store.SessionKey{App: "app", User: "u", Session: "s"}, ID: id})
	return inv.Context(ctx, a)
}

func TestLoggingPlugin(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level
		err   error
		want  []string // substrings of the one line logged; none when empty
	}{
		{name: "success is quiet at info", level: slog.LevelInfo},
		{name: "success at debug", level: slog.LevelDebug, want: []string{"run started", "run finished", "events=2", "duration=", "invocation=e-1"}},
		{name: "failure at info", level: slog.LevelInfo, err: errors.New("store down"), want: []string{`msg="run failed"`, "events=2", `err="store down"`, "session=s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := NewLogging(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
			ctx := runContext(t, t.Context(), "e-1")
			if c, err := l.BeforeRun(ctx); c != nil || err != nil {
				t.Fatal("before_run answered")
			}
			for range 2 {
				if ev, err := l.OnEvent(ctx, &agentrunnerv1.Event{}); ev != nil || err != nil {
					t.Fatal("on_event replaced the event")
				}
			}
			l.AfterRun(ctx, tc.err)
			out := buf.String()
			if len(tc.want) == 0 && out != "" {
				t.Fatalf("logged %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("log %q lacks %q", out, w)
				}
			}
			if len(l.starts) != 0 {
				t.Errorf("%d runs still tracked after they ended", len(l.starts))
			}
		})
	}
}
