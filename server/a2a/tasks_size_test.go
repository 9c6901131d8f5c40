package a2a

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"github.com/agentrunner/agentrunner/store"
)

// sessionsServer serves stored events by session, with a message limit
// of maxMsg bytes.
type sessionsServer struct {
	desk
	maxMsg int
	events map[string][]*agentrunnerv1.Event
}

func (s sessionsServer) Store() front.Store                        { return sessionsStore{events: s.events} }
func (s sessionsServer) MaxPageSize() int                          { return 100 }
func (s sessionsServer) MaxMessageBytes() int                      { return s.maxMsg }
func (s sessionsServer) Status(_ context.Context, err error) error { return err }

type sessionsStore struct {
	front.Store
	events map[string][]*agentrunnerv1.Event
}

func (s sessionsStore) ListEvents(_ context.Context, k store.SessionKey, after store.EventFilter, _ store.Page) ([]*agentrunnerv1.Event, string, error) {
	var out []*agentrunnerv1.Event
	for _, ev := range s.events[k.Session] {
		if ev.GetSequence() > after.AfterSequence {
			out = append(out, ev)
		}
	}
	return out, "", nil
}

// answered is a run of session s whose answer is n bytes of text, with
// the session holding the user's message and the answer.
func answered(s string, n int) (*agentrunnerv1.Run, []*agentrunnerv1.Event) {
	text := func(t string) *agentrunnerv1.Content {
		return &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: t}}}}
	}
	run := &agentrunnerv1.Run{RunId: "run-" + s, AppName: "app", UserId: "u", SessionId: s, FirstSequence: 1, LastSequence: 2,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED}
	return run, []*agentrunnerv1.Event{
		{Id: "q-" + s, Author: "user", Sequence: 1, Content: text("question")},
		{Id: "a-" + s, Author: "agent", Sequence: 2, Content: text(strings.Repeat("x", n))},
	}
}

// TestTaskSizeBound: GetTask refuses a task whose artifacts pass what a
// response holds (ResourceExhausted, naming the ways to read it), and a
// ListTasks page with artifacts is cut where they fill a response: the
// tasks before, whole, and a page that ends there; a first task too large
// alone is refused.
func TestTaskSizeBound(t *testing.T) {
	const kb = 1 << 10
	fake := sessionsServer{maxMsg: 64*kb + 100*kb, events: map[string][]*agentrunnerv1.Event{}}
	var runs []*agentrunnerv1.Run
	for _, s := range []string{"s1", "s2", "s3"} {
		run, evs := answered(s, 40*kb)
		fake.events[s], runs = evs, append(runs, run)
	}
	big, evs := answered("big", 120*kb)
	fake.events["big"] = evs
	h := &Handler{s: fake}

	task, n, err := h.taskOf(t.Context(), runs[0], h.responseBytes())
	if err != nil || len(task.Artifacts) != 1 || n < 40*kb || n > 41*kb {
		t.Fatalf("a task within the bound: %d artifacts of %d bytes, %v", len(task.Artifacts), n, err)
	}
	_, _, err = h.taskOf(t.Context(), big, h.responseBytes())
	if !isExhausted(err) {
		t.Fatalf("a task past the bound: %v; want ResourceExhausted", err)
	}
	if !strings.Contains(err.Error(), "SubscribeToTask") {
		t.Errorf("error %q does not say how to read the task", err)
	}

	tasks, cut, err := h.listedTasks(t.Context(), runs, &a2a.ListTasksRequest{IncludeArtifacts: true})
	if err != nil || cut != 2 || len(tasks) != 2 || tasks[1].ID != "run-s2" || len(tasks[1].Artifacts) != 1 {
		t.Fatalf("listing three tasks of 40 KiB within 100: %d tasks, cut at %d, %v; want the first two", len(tasks), cut, err)
	}
	if tasks, cut, err = h.listedTasks(t.Context(), runs, &a2a.ListTasksRequest{}); err != nil || cut != 3 || len(tasks) != 3 {
		t.Fatalf("listing without artifacts: %d tasks, cut at %d, %v; want all three", len(tasks), cut, err)
	}
	if _, _, err = h.listedTasks(t.Context(), []*agentrunnerv1.Run{big, runs[0]}, &a2a.ListTasksRequest{IncludeArtifacts: true}); !isExhausted(err) {
		t.Fatalf("a first task past the bound: %v; want ResourceExhausted", err)
	}
}

func isExhausted(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted
}

// TestHistoryLength: GetTask and ListTasks keep the historyLength most
// recent messages of a task's history; nil keeps them all.
func TestHistoryLength(t *testing.T) {
	task := func() *a2a.Task {
		return &a2a.Task{History: []*a2a.Message{a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("1")), a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("2"))}}
	}
	zero, one, five := 0, 1, 5
	for _, tc := range []struct {
		n    *int
		want int
	}{{nil, 2}, {&zero, 0}, {&one, 1}, {&five, 2}} {
		got := withHistory(task(), tc.n).History
		if len(got) != tc.want || (tc.want == 1 && got[0].Parts[0].Text() != "2") {
			t.Errorf("historyLength %v: %d messages, want the %d most recent", tc.n, len(got), tc.want)
		}
	}
}
