package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// ErrFailedPrecondition: the operation cannot run in the session's
// present state, for example a rewind while one of its runs is active.
// Trying again later may succeed.
var ErrFailedPrecondition = errors.New("failed precondition")

// ErrSessionMoved: a rewind's session got events after the rewind was
// planned (an ErrFailedPrecondition); planning it again may succeed.
var ErrSessionMoved = fmt.Errorf("session moved: %w", ErrFailedPrecondition)

// ForkReader is what PlanFork and PlanRewind read: any Store.
type ForkReader interface {
	GetSession(ctx context.Context, k SessionKey, opts GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	LoadArtifact(ctx context.Context, k SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error)
	ListArtifacts(ctx context.Context, k SessionKey, page Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
	ListArtifactVersions(ctx context.Context, k SessionKey, filename string, page Page) ([]*agentrunnerv1.ArtifactVersion, string, error)
}

// Forker forks and rewinds sessions (SessionService.ForkSession and
// RewindSession). Implemented by *boltstore.Store and *pgstore.Store; the
// plans they write are made by PlanFork and PlanRewind, from reads any
// Store serves, so that both stores fork and rewind alike.
type Forker interface {
	// ForkSession writes f in one transaction: the new session, its
	// events and its artifact versions, or nothing. A taken id is
	// ErrAlreadyExists.
	ForkSession(ctx context.Context, f *Fork) (*agentrunnerv1.Session, error)
	// AppendRewind appends r's event to session k in one transaction with
	// the artifact versions it restores, whose numbers it gives them
	// (they are set in the stored event's artifact_delta). It is
	// ErrFailedPrecondition when the session's last sequence is no longer
	// r.LastSequence (ErrSessionMoved: something was appended since the
	// plan; plan again)
	// or a run of the session is active (Active), as its stored record
	// says.
	AppendRewind(ctx context.Context, k SessionKey, r *Rewind) (*agentrunnerv1.Event, error)
}

// Fork is what ForkSession writes.
type Fork struct {
	// Target is the fork's key; an empty Session gets a random id.
	Target SessionKey
	// State is the fork's session-scoped state.
	State *structpb.Struct
	// ForkedFrom names the source and the point.
	ForkedFrom *agentrunnerv1.ForkedFrom
	// Events are the copied events, numbered 1..len(Events).
	Events []*agentrunnerv1.Event
	// Artifacts are the session-scoped artifact versions to copy, keeping
	// their version numbers (so that the events' artifact_delta still
	// names them).
	Artifacts []ForkArtifact
}

// ForkArtifact is one artifact version a fork copies.
type ForkArtifact struct {
	Meta *agentrunnerv1.ArtifactVersion
	Part *agentrunnerv1.Part
}

// CompactedSequence is the end of the newest compaction among the fork's
// events, the fork's compacted_sequence.
func (f *Fork) CompactedSequence() uint64 {
	var end uint64
	for _, ev := range f.Events {
		end = max(end, ev.GetActions().GetCompaction().GetEndSequence())
	}
	return end
}

// Rewind is what AppendRewind appends.
type Rewind struct {
	// Event is the rewind event, without its artifact versions.
	Event *agentrunnerv1.Event
	// Restore holds the content of each artifact version to add, by
	// filename.
	Restore map[string]*agentrunnerv1.Part
	// LastSequence is the session's last sequence the plan was made at.
	LastSequence uint64
}

// RestoreNames returns r's artifact names in order, so that every store
// saves them alike.
func (r *Rewind) RestoreNames() []string { return slices.Sorted(maps.Keys(r.Restore)) }

// sessionState returns the session-scoped keys of a merged state.
func sessionState(merged *structpb.Struct) map[string]*structpb.Value {
	out := map[string]*structpb.Value{}
	for k, v := range merged.GetFields() {
		if ScopeOf(k) == ScopeSession {
			out[k] = v
		}
	}
	return out
}

// StateAt returns the session-scoped state as of the end of events[:n],
// given the whole history events and the present session-scoped state
// now. Keys no event ever changed are the session's initial state (given
// to CreateSession) and are kept; the others take the value of the last
// event of events[:n] that set them, and are absent when none did (a key
// of the initial state that events change later is lost with them, as in
// adk-python). "app:" and "user:" keys are shared by other sessions and
// left out; "temp:" keys are never stored.
func StateAt(events []*agentrunnerv1.Event, n int, now map[string]*structpb.Value) map[string]*structpb.Value {
	touched := map[string]bool{}
	for _, ev := range events {
		for k := range ev.GetActions().GetStateDelta().GetFields() {
			touched[k] = true
		}
	}
	st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range now {
		if !touched[k] {
			st.Fields[k] = v
		}
	}
	for _, ev := range events[:n] {
		d, _, _ := SplitDelta(ev.GetActions().GetStateDelta())
		ApplyDelta(st, d)
	}
	return st.Fields
}

// versionsAt returns the session-scoped artifact versions events name in
// their artifact_delta, the last naming of each filename.
func versionsAt(events []*agentrunnerv1.Event) map[string]int64 {
	out := map[string]int64{}
	for _, ev := range events {
		for name, v := range ev.GetActions().GetArtifactDelta() {
			if ScopeOf(name) != ScopeUser {
				out[name] = v
			}
		}
	}
	return out
}

// allEvents reads session k with every event.
func allEvents(ctx context.Context, s ForkReader, k SessionKey) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	sess, events, err := s.GetSession(ctx, k, GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(events)) != sess.GetLastSequence() {
		return nil, nil, fmt.Errorf("session %s: read %d of its %d events", k, len(events), sess.GetLastSequence())
	}
	return sess, events, nil
}

// PlanFork reads session src from s and returns the fork of its events
// 1..upTo as target: the events as stored, the session-scoped state as of
// event upTo (StateAt) and the session-scoped artifact versions event
// upTo saw, from version 1 on (those deleted since are not copied). An
// artifact that events name in their artifact_delta was seen at the
// version the last of events 1..upTo names; one no event names (saved
// through ArtifactService) at the versions created by event upTo's time.
// "user:" artifacts are the fork's owner's and not copied.
func PlanFork(ctx context.Context, s ForkReader, src SessionKey, upTo uint64, target SessionKey) (*Fork, error) {
	sess, events, err := allEvents(ctx, s, src)
	if err != nil {
		return nil, err
	}
	if upTo > sess.GetLastSequence() {
		return nil, fmt.Errorf("up_to_sequence %d is past session %s's last event %d: %w", upTo, src, sess.GetLastSequence(), ErrInvalidArgument)
	}
	n := int(upTo)
	f := &Fork{
		Target:     target,
		State:      &structpb.Struct{Fields: StateAt(events, n, sessionState(sess.GetState()))},
		ForkedFrom: &agentrunnerv1.ForkedFrom{UserId: src.User, SessionId: src.Session, Sequence: upTo},
		Events:     make([]*agentrunnerv1.Event, n),
	}
	for i, ev := range events[:n] {
		f.Events[i] = ev.CloneVT()
	}
	if n > 0 {
		f.ForkedFrom.EventId = events[n-1].GetId()
	}
	f.Artifacts, err = forkArtifacts(ctx, s, src, sess, events, n)
	return f, err
}

// forkArtifacts returns the artifact versions a fork of events[:n] of
// session src copies (see PlanFork).
func forkArtifacts(ctx context.Context, s ForkReader, src SessionKey, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event, n int) ([]ForkArtifact, error) {
	named, seen := versionsAt(events), versionsAt(events[:n])
	at := sess.GetCreateTime().AsTime()
	if n > 0 {
		at = events[n-1].GetTimestamp().AsTime()
	}
	var out []ForkArtifact
	page := Page{Size: MaxPageSize}
	for {
		latest, next, err := s.ListArtifacts(ctx, src, page)
		if err != nil {
			return nil, err
		}
		for _, a := range latest {
			name := a.GetFilename()
			if ScopeOf(name) == ScopeUser {
				continue
			}
			_, isNamed := named[name]
			copied, err := forkVersions(ctx, s, src, name, func(v *agentrunnerv1.ArtifactVersion) bool {
				if isNamed {
					return v.GetVersion() <= seen[name]
				}
				return !v.GetCreateTime().AsTime().After(at)
			})
			if err != nil {
				return nil, err
			}
			out = append(out, copied...)
		}
		if next == "" {
			return out, nil
		}
		page.Token = next
	}
}

// forkVersions loads the versions of one artifact that keep selects,
// oldest first.
func forkVersions(ctx context.Context, s ForkReader, k SessionKey, name string, keep func(*agentrunnerv1.ArtifactVersion) bool) ([]ForkArtifact, error) {
	var out []ForkArtifact
	page := Page{Size: MaxPageSize}
	for {
		versions, next, err := s.ListArtifactVersions(ctx, k, name, page)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if !keep(v) {
				continue
			}
			part, meta, err := s.LoadArtifact(ctx, k, name, v.GetVersion())
			if err != nil {
				return nil, err
			}
			out = append(out, ForkArtifact{Meta: meta, Part: part})
		}
		if next == "" {
			slices.Reverse(out)
			return out, nil
		}
		page.Token = next
	}
}

// EmptyArtifact is the version a rewind saves of an artifact created
// after the rewind point: no content, as adk-python's rewind saves.
func EmptyArtifact() *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "application/octet-stream"}}}
}

// PlanRewind reads session k from s and returns the rewind to before the
// first event of invocation invocationID, as adk-python's
// Runner.rewind_async computes it: a state delta that restores the
// session-scoped state as of that point (StateAt), and the session-scoped
// artifacts whose version changed since (by the events' artifact_delta)
// restored to the version they had then, or to an empty version
// (EmptyArtifact) when they had none. The event's author is "user" and
// its invocation id newID's.
func PlanRewind(ctx context.Context, s ForkReader, k SessionKey, invocationID string, newID func() string) (*Rewind, error) {
	if invocationID == "" {
		return nil, fmt.Errorf("before_invocation_id is empty: %w", ErrInvalidArgument)
	}
	sess, events, err := allEvents(ctx, s, k)
	if err != nil {
		return nil, err
	}
	n := slices.IndexFunc(events, func(ev *agentrunnerv1.Event) bool { return ev.GetInvocationId() == invocationID })
	if n < 0 {
		return nil, fmt.Errorf("no event of session %s has invocation id %q: %w", k, invocationID, ErrNotFound)
	}
	now := sessionState(sess.GetState())
	target := StateAt(events, n, now)
	delta := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for key, v := range target {
		if old, ok := now[key]; !ok || !proto.Equal(old, v) {
			delta.Fields[key] = v
		}
	}
	for key := range now {
		if _, ok := target[key]; !ok {
			delta.Fields[key] = structpb.NewNullValue()
		}
	}
	r := &Rewind{Restore: map[string]*agentrunnerv1.Part{}, LastSequence: sess.GetLastSequence()}
	then := versionsAt(events[:n])
	for name, v := range versionsAt(events) {
		was, ok := then[name]
		switch {
		case ok && was == v:
			continue
		case !ok:
			r.Restore[name] = EmptyArtifact()
			continue
		}
		part, _, err := s.LoadArtifact(ctx, k, name, was)
		if errors.Is(err, ErrNotFound) {
			part = EmptyArtifact() // deleted since: nothing to restore
		} else if err != nil {
			return nil, err
		}
		r.Restore[name] = part
	}
	if len(delta.Fields) == 0 {
		delta = nil
	}
	r.Event = &agentrunnerv1.Event{
		InvocationId: newID(),
		Author:       "user",
		Actions:      &agentrunnerv1.EventActions{StateDelta: delta, RewindBeforeInvocationId: invocationID},
	}
	return r, nil
}

// ActiveRunError is the ErrFailedPrecondition of a rewind refused
// because run runID of session k is active, worded alike in every store.
func ActiveRunError(k SessionKey, runID string, st agentrunnerv1.RunStatus) error {
	return fmt.Errorf("session %s has run %s %s: rewind it once the run ends: %w", k, runID, st, ErrFailedPrecondition)
}

// MovedError is the ErrFailedPrecondition of a rewind whose session got
// events after it was planned.
func MovedError(k SessionKey, planned, last uint64) error {
	return fmt.Errorf("session %s got events %d..%d while the rewind was planned: %w", k, planned+1, last, ErrSessionMoved)
}
