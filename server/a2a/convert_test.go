package a2a

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// TestInterruptedTaskFails: a run a stopped server interrupted is a failed
// task, which says how it goes on, and counts as ended; a task left
// "working" would keep its client polling for ever, since nothing
// continues the run but ResumeRun.
func TestInterruptedTaskFails(t *testing.T) {
	run := &agentrunnerv1.Run{RunId: "r1", SessionId: "s1", Status: agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED}
	st := statusOf(run, nil)
	if st.State != a2a.TaskStateFailed || !ended(run.GetStatus()) {
		t.Fatalf("state %v, ended %v; want failed and ended", st.State, ended(run.GetStatus()))
	}
	if st.Message == nil || len(st.Message.Parts) != 1 || !strings.Contains(st.Message.Parts[0].Text(), "ResumeRun") {
		t.Fatalf("status message %+v; want one that names ResumeRun", st.Message)
	}
	if got := runStatuses(a2a.TaskStateFailed); len(got) != 2 || got[1] != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("failed tasks list runs %v; want FAILED and INTERRUPTED", got)
	}
}

// missingStore is a store that has no artifact version.
type missingStore struct {
	err error
}

func (m missingStore) LoadArtifact(context.Context, store.SessionKey, string, int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error) {
	return nil, nil, m.err
}

// TestDeletedArtifactLeftOut: a saved artifact version deleted since the
// run saved it is left out of the task (which stays readable), while any
// other failure to read it is an error.
func TestDeletedArtifactLeftOut(t *testing.T) {
	ev := &agentrunnerv1.Event{Author: "agent", InvocationId: "r1", Sequence: 2,
		Actions: &agentrunnerv1.EventActions{ArtifactDelta: map[string]int64{"report.txt": 1}}}
	k := store.SessionKey{App: "app", User: "u", Session: "s1"}
	got, err := newTranslator(missingStore{err: fmt.Errorf("gone: %w", store.ErrNotFound)}, k, "r1").event(t.Context(), ev)
	if err != nil || len(got) != 0 {
		t.Fatalf("deleted version: %v, %v; want no update and no error", got, err)
	}
	if _, err := newTranslator(missingStore{err: errors.New("disk on fire")}, k, "r1").event(t.Context(), ev); err == nil {
		t.Fatal("an unreadable store gave no error")
	}
}
