package runner

import (
	"iter"
	"slices"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// TestAttachMidStreamPartials: a run streamed on its caller's goroutine
// keeps no partial event nobody follows, yet its caller gets every partial
// and an attacher that comes mid-answer gets the stored events before it
// came and every partial published after, then the complete answer.
func TestAttachMidStreamPartials(t *testing.T) {
	entered, proceed := make(chan struct{}), make(chan struct{})
	root := mustCustom(t, agent.Config{Name: "talker", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			one := say("one ")
			one.Partial = true
			if !yield(one, nil) {
				return
			}
			close(entered)
			<-proceed
			two := say("two")
			two.Partial = true
			if yield(two, nil) {
				yield(say("one two"), nil)
			}
		}
	}})
	r, _, k := newTestRunner(t, root)
	runID := make(chan string, 1)
	streamed := make(chan []string, 1)
	go func() {
		var kinds []string
		for u, err := range r.Stream(t.Context(), request(k, "hi")) {
			switch {
			case err != nil:
				kinds = append(kinds, "error: "+err.Error())
			case u.Run != nil && len(kinds) == 0:
				runID <- u.Run.GetRunId()
				kinds = append(kinds, "run")
			case u.Event != nil:
				kinds = append(kinds, eventKind(u.Event))
			}
		}
		streamed <- kinds
	}()
	id := <-runID
	waitClosed(t, entered, "the first partial")

	var attached []string
	for u, err := range r.Attach(t.Context(), id, 0) {
		switch {
		case err != nil:
			t.Fatalf("attach: %v", err)
		case u.Event != nil:
			attached = append(attached, eventKind(u.Event))
			if u.Event.GetContent().GetRole() == "user" {
				// The attacher follows the log now: the answer goes on.
				close(proceed)
			}
		}
	}
	if want := []string{"user: hi", "partial: two", "talker: one two"}; !slices.Equal(attached, want) {
		t.Errorf("the attacher got %q, want %q", attached, want)
	}
	if got, want := <-streamed, []string{"run", "partial: one ", "partial: two", "talker: one two"}; !slices.Equal(got, want) {
		t.Errorf("the caller got %q, want %q", got, want)
	}
}

func eventKind(ev *agentrunnerv1.Event) string {
	switch {
	case ev.GetPartial():
		return "partial: " + textOf(ev.GetContent())
	case ev.GetContent().GetRole() == "user":
		return "user: " + textOf(ev.GetContent())
	default:
		return ev.GetAuthor() + ": " + textOf(ev.GetContent())
	}
}
