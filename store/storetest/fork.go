package storetest

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// RunFork runs the fork and rewind cases (store.Forker) against stores
// made by open, which must implement it.
func RunFork(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, f store.Forker)
	}{
		{"ForkEventsStateArtifacts", testForkEventsStateArtifacts},
		{"ForkOtherUserAndRefusals", testForkOtherUserAndRefusals},
		{"RewindStateAndArtifacts", testRewindStateAndArtifacts},
		{"RewindRefusedWhileRunActive", testRewindRefusedWhileRunActive},
		{"ForkCarriesNoLedgerNorRuns", testForkCarriesNoLedgerNorRuns},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			f, ok := s.(store.Forker)
			if !ok {
				t.Fatalf("%T is not a store.Forker", s)
			}
			tc.fn(t, s, f)
		})
	}
}

// forkHistory makes session k of the fork cases: initial state in every
// scope, then two invocations, i1 (events 1, 2) and i2 (events 3, 4),
// which change state of every scope and save artifact versions: "f"
// version 1 in i1 and 2 in i2, "g" version 1 in i2, and "user:doc"
// version 1 in i1.
func forkHistory(t *testing.T, s store.Store, k store.SessionKey) []*agentrunnerv1.Event {
	t.Helper()
	ctx := t.Context()
	create(t, s, k, map[string]any{"init": 1, "touched": "init", "user:u": 1, "app:a": 1})
	save := func(name, text string) int64 {
		v, err := s.SaveArtifact(ctx, k, name, textPart(text))
		if err != nil {
			t.Fatalf("SaveArtifact(%s): %v", name, err)
		}
		return v.GetVersion()
	}
	var out []*agentrunnerv1.Event
	add := func(inv string, delta map[string]any, arts map[string]int64) {
		ev := textEvent("user", "in "+inv, delta)
		ev.InvocationId = inv
		if arts != nil {
			if ev.Actions == nil {
				ev.Actions = &agentrunnerv1.EventActions{}
			}
			ev.Actions.ArtifactDelta = arts
		}
		out = append(out, appendEv(t, s, k, ev))
	}
	add("i1", map[string]any{"x": 1, "user:u": 2, "temp:t": 1}, nil)
	add("i1", map[string]any{"y": 1}, map[string]int64{"f": save("f", "f1"), "user:doc": save("user:doc", "d1")})
	add("i2", map[string]any{"x": 2, "z": 1, "app:a": 2, "touched": nil}, map[string]int64{"f": save("f", "f2")})
	add("i2", nil, map[string]int64{"g": save("g", "g1")})
	return out
}

// artifactText returns the latest content of an artifact and its version.
func artifactText(t *testing.T, s store.Store, k store.SessionKey, name string) (string, int64) {
	t.Helper()
	p, v, err := s.LoadArtifact(t.Context(), k, name, 0)
	if err != nil {
		t.Fatalf("LoadArtifact(%s, %q): %v", k, name, err)
	}
	if d := p.GetInlineData(); d != nil {
		return fmt.Sprintf("<%s %d bytes>", d.GetMimeType(), len(d.GetData())), v.GetVersion()
	}
	return p.GetText(), v.GetVersion()
}

func testForkEventsStateArtifacts(t *testing.T, s store.Store, f store.Forker) {
	ctx := t.Context()
	src := key("app", "u", "src")
	srcEvents := forkHistory(t, s, src)
	plan, err := store.PlanFork(ctx, s, src, 2, key("app", "u", "fork"))
	if err != nil {
		t.Fatalf("PlanFork: %v", err)
	}
	sess, err := f.ForkSession(ctx, plan)
	if err != nil {
		t.Fatalf("ForkSession: %v", err)
	}
	want := &agentrunnerv1.ForkedFrom{UserId: "u", SessionId: "src", Sequence: 2, EventId: srcEvents[1].GetId()}
	if !proto.Equal(sess.GetForkedFrom(), want) || sess.GetSessionId() != "fork" || sess.GetLastSequence() != 2 {
		t.Fatalf("fork = %v, want forked_from %v, id fork, last_sequence 2", sess, want)
	}
	got, events := get(t, s, key("app", "u", "fork"), store.GetOptions{})
	if !proto.Equal(got.GetForkedFrom(), want) {
		t.Fatalf("stored forked_from = %v, want %v", got.GetForkedFrom(), want)
	}
	if len(events) != 2 {
		t.Fatalf("fork holds %d events, want 2", len(events))
	}
	for i, ev := range events {
		if !proto.Equal(ev, srcEvents[i]) {
			t.Fatalf("fork's event %d = %v, want the source's %v", i+1, ev, srcEvents[i])
		}
	}
	// Session scope as of event 2; the shared scopes are what they are
	// now ("app:a" 2, set by event 3, and "user:u" 2). "touched", set at
	// creation and deleted by event 3, is lost (see store.StateAt).
	wantState := map[string]any{"init": 1.0, "x": 1.0, "y": 1.0, "user:u": 2.0, "app:a": 2.0}
	if fmt.Sprint(stateOf(got)) != fmt.Sprint(wantState) {
		t.Fatalf("fork's state = %v, want %v", stateOf(got), wantState)
	}
	// Artifacts as event 2 saw them: "f" at version 1; "g" not yet.
	fk := key("app", "u", "fork")
	if text, v := artifactText(t, s, fk, "f"); text != "f1" || v != 1 {
		t.Fatalf("fork's f = %q version %d, want f1 version 1", text, v)
	}
	_, _, err = s.LoadArtifact(ctx, fk, "g", 0)
	wantErr(t, err, store.ErrNotFound, "fork's g, saved after the point")
	if text, _ := artifactText(t, s, fk, "user:doc"); text != "d1" {
		t.Fatalf("fork's user:doc = %q, want the user's d1", text)
	}
	// The source is unchanged; the fork has no runs and no ledger.
	if text, v := artifactText(t, s, src, "f"); text != "f2" || v != 2 {
		t.Fatalf("source's f = %q version %d after the fork, want f2 version 2", text, v)
	}
	runs, _, err := s.ListRuns(ctx, fk, store.Page{})
	if err != nil || len(runs) != 0 {
		t.Fatalf("fork's runs = %v, %v; want none", runs, err)
	}
	// The fork goes on on its own: its next event is number 3.
	if ev := appendEv(t, s, fk, textEvent("user", "next", map[string]any{"x": 9})); ev.GetSequence() != 3 {
		t.Fatalf("fork's next event has sequence %d, want 3", ev.GetSequence())
	}
	if srcSess, _ := get(t, s, src, store.GetOptions{NumRecentEvents: 1}); srcSess.GetState().AsMap()["x"] != 2.0 {
		t.Fatalf("source's x = %v after the fork's append, want 2", srcSess.GetState().AsMap()["x"])
	}
}

func testForkOtherUserAndRefusals(t *testing.T, s store.Store, f store.Forker) {
	ctx := t.Context()
	src := key("app", "u", "src")
	forkHistory(t, s, src)
	// Into another user, holding no event: the initial state's untouched
	// keys; "touched", set at creation and deleted by event 3, is lost
	// (see store.StateAt); the user's scope is the new owner's.
	plan, err := store.PlanFork(ctx, s, src, 0, key("app", "u2", ""))
	if err != nil {
		t.Fatalf("PlanFork(0): %v", err)
	}
	sess, err := f.ForkSession(ctx, plan)
	if err != nil {
		t.Fatalf("ForkSession(0): %v", err)
	}
	if sess.GetSessionId() == "" || sess.GetUserId() != "u2" || sess.GetLastSequence() != 0 {
		t.Fatalf("fork = %v, want a random id of u2 with no events", sess)
	}
	wantState := map[string]any{"init": 1.0, "app:a": 2.0}
	if fmt.Sprint(stateOf(sess)) != fmt.Sprint(wantState) {
		t.Fatalf("fork's state = %v, want %v", stateOf(sess), wantState)
	}
	fk := key("app", "u2", sess.GetSessionId())
	if list, _, err := s.ListArtifacts(ctx, fk, store.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("artifacts of an empty fork into another user = %v, %v; want none", list, err)
	}
	_, err = store.PlanFork(ctx, s, src, 5, key("app", "u", "x"))
	wantErr(t, err, store.ErrInvalidArgument, "fork past the last event")
	_, err = store.PlanFork(ctx, s, key("app", "u", "nope"), 0, key("app", "u", "x"))
	wantErr(t, err, store.ErrNotFound, "fork of a missing session")
	plan, err = store.PlanFork(ctx, s, src, 4, src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ForkSession(ctx, plan)
	wantErr(t, err, store.ErrAlreadyExists, "fork onto a taken id")
	// Refused whole: the source kept its events.
	if got, _ := get(t, s, src, store.GetOptions{}); got.GetLastSequence() != 4 || got.GetForkedFrom() != nil {
		t.Fatalf("source after a refused fork onto it = %v", got)
	}
}

// rewind plans and appends a rewind of session k.
func rewind(t *testing.T, s store.Store, f store.Forker, k store.SessionKey, inv string) (*agentrunnerv1.Event, error) {
	t.Helper()
	r, err := store.PlanRewind(t.Context(), s, k, inv, func() string { return "rw-" + inv })
	if err != nil {
		return nil, err
	}
	return f.AppendRewind(t.Context(), k, r)
}

func testRewindStateAndArtifacts(t *testing.T, s store.Store, f store.Forker) {
	k := key("app", "u", "rw")
	forkHistory(t, s, k)
	ev, err := rewind(t, s, f, k, "i2")
	if err != nil {
		t.Fatalf("rewind before i2: %v", err)
	}
	if ev.GetSequence() != 5 || ev.GetAuthor() != "user" || ev.GetActions().GetRewindBeforeInvocationId() != "i2" || ev.GetInvocationId() != "rw-i2" {
		t.Fatalf("rewind event = %v", ev)
	}
	// "f" back to f1 as version 3, "g" (made in i2) emptied as version 2.
	if d := ev.GetActions().GetArtifactDelta(); fmt.Sprint(d) != "map[f:3 g:2]" {
		t.Fatalf("rewind's artifact_delta = %v, want map[f:3 g:2]", d)
	}
	sess, events := get(t, s, k, store.GetOptions{})
	if len(events) != 5 || !proto.Equal(events[4], ev) {
		t.Fatalf("session after the rewind holds %d events, the last %v; want 5, the rewind", len(events), events[len(events)-1])
	}
	// Session scope as before i2; shared scopes untouched; "touched",
	// set at creation and deleted in i2, is not brought back (as in
	// adk-python: no event set it before the point).
	wantState := map[string]any{"init": 1.0, "x": 1.0, "y": 1.0, "user:u": 2.0, "app:a": 2.0}
	if fmt.Sprint(stateOf(sess)) != fmt.Sprint(wantState) {
		t.Fatalf("state after the rewind = %v, want %v", stateOf(sess), wantState)
	}
	if text, v := artifactText(t, s, k, "f"); text != "f1" || v != 3 {
		t.Fatalf("f after the rewind = %q version %d, want f1 version 3", text, v)
	}
	if text, v := artifactText(t, s, k, "g"); text != "<application/octet-stream 0 bytes>" || v != 2 {
		t.Fatalf("g after the rewind = %q version %d, want an empty version 2", text, v)
	}
	if text, v := artifactText(t, s, k, "user:doc"); text != "d1" || v != 1 {
		t.Fatalf("user:doc after the rewind = %q version %d, want d1 version 1 (user artifacts are kept)", text, v)
	}
	// Nothing deleted: the rewound versions are still there.
	if text := loadText(t, s, k, "f", 2); text != "f2" {
		t.Fatalf("f version 2 after the rewind = %q, want f2", text)
	}
	// A rewind to before the start: every session key an event set goes.
	if _, err := rewind(t, s, f, k, "i1"); err != nil {
		t.Fatalf("rewind before i1: %v", err)
	}
	sess, _ = get(t, s, k, store.GetOptions{})
	wantState = map[string]any{"init": 1.0, "user:u": 2.0, "app:a": 2.0}
	if fmt.Sprint(stateOf(sess)) != fmt.Sprint(wantState) {
		t.Fatalf("state after the rewind before i1 = %v, want %v", stateOf(sess), wantState)
	}
	_, err = rewind(t, s, f, k, "nope")
	wantErr(t, err, store.ErrNotFound, "rewind before an invocation the session does not hold")
	_, err = rewind(t, s, f, key("app", "u", "missing"), "i1")
	wantErr(t, err, store.ErrNotFound, "rewind of a missing session")
}

func loadText(t *testing.T, s store.Store, k store.SessionKey, name string, version int64) string {
	t.Helper()
	p, _, err := s.LoadArtifact(t.Context(), k, name, version)
	if err != nil {
		t.Fatalf("LoadArtifact(%q, %d): %v", name, version, err)
	}
	return p.GetText()
}

func testRewindRefusedWhileRunActive(t *testing.T, s store.Store, f store.Forker) {
	ctx := t.Context()
	k := key("app", "u", "busy")
	forkHistory(t, s, k)
	other := key("app", "u", "other")
	create(t, s, other, nil)
	// Another session's active run refuses nothing here.
	putRun(t, s, runRec(other, "r-other", 1, runRunning))
	for _, st := range []agentrunnerv1.RunStatus{runPending, runRunning, runInput} {
		putRun(t, s, runRec(k, "r1", 2, st))
		_, err := rewind(t, s, f, k, "i2")
		wantErr(t, err, store.ErrFailedPrecondition, fmt.Sprintf("rewind while a run is %s", st))
	}
	if sess, _ := get(t, s, k, store.GetOptions{}); sess.GetLastSequence() != 4 {
		t.Fatalf("refused rewinds appended: last sequence %d, want 4", sess.GetLastSequence())
	}
	if text, v := artifactText(t, s, k, "f"); text != "f2" || v != 2 {
		t.Fatalf("refused rewinds saved f: %q version %d", text, v)
	}
	// The run's final record, queued: the rewind sees it.
	s.PutRunLater(withStatus(getRun(t, s, "r1"), runSucceeded))
	if _, err := rewind(t, s, f, k, "i2"); err != nil {
		t.Fatalf("rewind once the run ended: %v", err)
	}
	// A plan made before an append is refused: plan again.
	r, err := store.PlanRewind(ctx, s, k, "i1", func() string { return "late" })
	if err != nil {
		t.Fatal(err)
	}
	appendEv(t, s, k, textEvent("user", "meanwhile", nil))
	_, err = f.AppendRewind(ctx, k, r)
	wantErr(t, err, store.ErrFailedPrecondition, "rewind planned before an append")
}

func testForkCarriesNoLedgerNorRuns(t *testing.T, s store.Store, f store.Forker) {
	ctx := t.Context()
	k := key("app", "u", "calls")
	create(t, s, k, nil)
	call := &agentrunnerv1.Event{Author: "agent", InvocationId: "r1", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{
		Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "lookup"}},
	}}}}
	appendRun(t, s, k, call, runRec(k, "r1", 1, runSucceeded))
	if calls, err := s.ListToolCalls(ctx, k); err != nil || len(calls) != 1 {
		t.Fatalf("source's ledger = %v, %v; want the call", calls, err)
	}
	plan, err := store.PlanFork(ctx, s, k, 1, key("app", "u", "calls-fork"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ForkSession(ctx, plan); err != nil {
		t.Fatal(err)
	}
	fk := key("app", "u", "calls-fork")
	if calls, err := s.ListToolCalls(ctx, fk); err != nil || len(calls) != 0 {
		t.Errorf("fork's ledger = %v, %v; want none (not carried)", calls, err)
	}
	if runs, _, err := s.ListRuns(ctx, fk, store.Page{}); err != nil || len(runs) != 0 {
		t.Errorf("fork's runs = %v, %v; want none (not carried)", runs, err)
	}
	sess, _ := get(t, s, fk, store.GetOptions{})
	if sess.GetUsage() != nil || sess.GetTotalTokens() != 0 {
		t.Errorf("fork's usage = %v, %d tokens; want none", sess.GetUsage(), sess.GetTotalTokens())
	}
}
