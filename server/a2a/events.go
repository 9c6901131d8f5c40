package a2a

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/store"
)

// translator turns one run's updates into A2A events the way adk-go's
// executor does (server/adka2a): the run's first record opens the task;
// each agent event's parts are an artifact update, an author's partial
// chunks appended to one artifact that its complete event then replaces
// (so a client that keeps artifacts by id ends with the answer once);
// each artifact the run saves is a task artifact; calls the run waits on
// go in the input-required status message; the last record is the
// status update that ends the task.
//
// An answer's artifact id is its author's and its rank among the
// author's answers in the run ("agent:{author}:{n}", see answerID), not
// the complete event's id: the partial chunks that open the artifact come
// before the complete event and its id exist, and GetTask, which reads
// the stored events alone, must name the artifact as the stream did.
// artifacts is what a translator reads of the store: the artifact
// versions an event's actions name.
type artifacts interface {
	LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
}

type translator struct {
	st      artifacts
	k       store.SessionKey
	info    a2a.TaskInfo
	history []*a2a.Message
	opened  bool
	// ended is set once the status update that ends the task is out:
	// the terminal error the runner adds after a cancelled or failed
	// run's last record says nothing more to an A2A client.
	ended bool
	calls map[string]*agentrunnerv1.Part
	// streaming holds the authors whose partial chunks opened an
	// artifact that their complete event has not closed yet; answers
	// counts each author's complete answers so far.
	streaming map[string]bool
	answers   map[string]int
	// bytes is the encoded size of the parts the artifacts so far carry
	// (GetTask and ListTasks bound a response by it).
	bytes int
}

func newTranslator(st artifacts, k store.SessionKey, runID string, history ...*a2a.Message) *translator {
	return &translator{
		st: st, k: k, history: history,
		info:      a2a.TaskInfo{TaskID: a2a.TaskID(runID), ContextID: k.Session},
		calls:     map[string]*agentrunnerv1.Part{},
		streaming: map[string]bool{},
		answers:   map[string]int{},
	}
}

// answerID is the artifact id of author's n-th answer in a task (from 1).
func answerID(author string, n int) a2a.ArtifactID {
	return a2a.ArtifactID(fmt.Sprintf("agent:%s:%d", author, n))
}

// seed counts the answers of a run's earlier events, stored before this
// translator's updates: a resumed run's stream goes on from them, and
// its artifacts must be named as GetTask names them.
func (t *translator) seed(ev *agentrunnerv1.Event) {
	if ev.GetAuthor() != "user" && !ev.GetPartial() && len(answerContent(ev).GetParts()) > 0 {
		t.answers[ev.GetAuthor()]++
	}
}

// events returns the A2A events of one update, in order.
func (t *translator) events(ctx context.Context, u runner.Update) ([]a2a.Event, error) {
	switch {
	case u.Err != nil:
		p := a2a.NewTextPart(u.Err.Error())
		p.SetMeta(metaIsError, true)
		return []a2a.Event{a2a.NewStatusUpdateEvent(t.info, a2a.TaskStateWorking, a2a.NewMessageForTask(a2a.MessageRoleAgent, t.info, p))}, nil
	case u.Run != nil:
		return t.record(u.Run), nil
	case u.Event != nil:
		return t.event(ctx, u.Event)
	}
	return nil, nil
}

// record opens the task at the run's first record and ends it at a
// record of a run that ended. A replayed run (SubscribeToTask of an ended
// task) opens as submitted too: its events follow from the start.
func (t *translator) record(run *agentrunnerv1.Run) []a2a.Event {
	var out []a2a.Event
	if !t.opened {
		t.opened = true
		task := &a2a.Task{ID: t.info.TaskID, ContextID: t.info.ContextID, History: slices.Clone(t.history), Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted}}
		if !ended(run.GetStatus()) {
			task.Status.State = taskState(run.GetStatus())
		}
		return append(out, task)
	}
	st := statusOf(run, t.calls)
	if !ended(run.GetStatus()) && st.State == a2a.TaskStateSubmitted {
		return nil
	}
	t.ended = ended(run.GetStatus())
	ev := &a2a.TaskStatusUpdateEvent{TaskID: t.info.TaskID, ContextID: t.info.ContextID, Status: st}
	return append(out, ev)
}

func (t *translator) event(ctx context.Context, ev *agentrunnerv1.Event) ([]a2a.Event, error) {
	if ev.GetAuthor() == "user" {
		if msg := ev.GetContent(); msg != nil && len(t.history) == 0 {
			m := a2a.NewMessageForTask(a2a.MessageRoleUser, t.info, toA2AParts(msg, nil)...)
			t.history = append(t.history, m)
		}
		return nil, nil
	}
	collectCalls(t.calls, ev)
	var out []a2a.Event
	if up := t.artifactOf(ev); up != nil {
		out = append(out, up)
	}
	names := slices.Sorted(maps.Keys(ev.GetActions().GetArtifactDelta()))
	for _, name := range names {
		up, err := t.saved(ctx, name, ev.GetActions().GetArtifactDelta()[name])
		switch {
		case errors.Is(err, store.ErrNotFound):
			// The version was deleted since: the task goes on without it,
			// rather than being "not found" as a whole.
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, up)
	}
	return out, nil
}

// answerContent is what an agent event shows as an artifact: its parts
// but the calls the caller must answer, which the input-required status
// carries.
func answerContent(ev *agentrunnerv1.Event) *agentrunnerv1.Content {
	c := &agentrunnerv1.Content{Role: ev.GetContent().GetRole()}
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc != nil && slices.Contains(ev.GetLongRunningToolIds(), fc.GetId()) {
			continue
		}
		c.Parts = append(c.Parts, p)
	}
	return c
}

// artifactOf is the artifact update of an agent event's parts, or nil.
func (t *translator) artifactOf(ev *agentrunnerv1.Event) *a2a.TaskArtifactUpdateEvent {
	c := answerContent(ev)
	parts := toA2AParts(c, nil)
	if len(parts) == 0 {
		return nil
	}
	t.bytes += proto.Size(c)
	author := ev.GetAuthor()
	id := answerID(author, t.answers[author]+1)
	up := &a2a.TaskArtifactUpdateEvent{TaskID: t.info.TaskID, ContextID: t.info.ContextID}
	meta := map[string]any{metaPartial: ev.GetPartial()}
	if ev.GetErrorCode() != "" {
		meta[metaErrorCode] = ev.GetErrorCode()
	}
	if ev.GetPartial() {
		up.Append = t.streaming[author]
		t.streaming[author] = true
	} else {
		delete(t.streaming, author)
		t.answers[author]++
		up.LastChunk = true
	}
	up.Metadata = meta
	up.Artifact = &a2a.Artifact{ID: id, Name: author, Parts: parts, Metadata: maps.Clone(meta)}
	return up
}

// saved is the task artifact of a version the run saved.
func (t *translator) saved(ctx context.Context, name string, version int64) (*a2a.TaskArtifactUpdateEvent, error) {
	part, _, err := t.st.LoadArtifact(ctx, t.k, name, version)
	if err != nil {
		return nil, fmt.Errorf("load artifact %q version %d: %w", name, version, err)
	}
	t.bytes += proto.Size(part)
	parts := toA2AParts(&agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{part}}, nil)
	for _, p := range parts {
		if p.Filename == "" {
			p.Filename = name
		}
	}
	return &a2a.TaskArtifactUpdateEvent{
		TaskID: t.info.TaskID, ContextID: t.info.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID(fmt.Sprintf("artifact:%s@%d", name, version)), Name: name, Parts: parts,
			Metadata: map[string]any{"agentrunner_artifact_version": version}},
	}, nil
}

// apply folds an event into the task a blocking send or GetTask returns.
func apply(task *a2a.Task, ev a2a.Event) *a2a.Task {
	switch v := ev.(type) {
	case *a2a.Task:
		return v
	case *a2a.TaskStatusUpdateEvent:
		task.Status = v.Status
	case *a2a.TaskArtifactUpdateEvent:
		i := slices.IndexFunc(task.Artifacts, func(a *a2a.Artifact) bool { return a.ID == v.Artifact.ID })
		switch {
		case i < 0:
			task.Artifacts = append(task.Artifacts, v.Artifact)
		case v.Append:
			task.Artifacts[i].Parts = append(task.Artifacts[i].Parts, v.Artifact.Parts...)
		default:
			task.Artifacts[i] = v.Artifact
		}
	}
	return task
}
