// Package storetest is the conformance suite every store.Store
// implementation runs: the session, event, state-scope, artifact and run
// record semantics that the runner and the gRPC API rely on.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openMyStore(t) })
//	}
package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Open returns a new, empty store; the suite closes it.
type Open func(t *testing.T) store.Store

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateGeneratesID", testCreateGeneratesID},
		{"CreateAlreadyExists", testCreateAlreadyExists},
		{"NotFound", testNotFound},
		{"InvalidKeys", testInvalidKeys},
		{"AppendAssignsSequence", testAppendAssignsSequence},
		{"AppendRejectsPartial", testAppendRejectsPartial},
		{"AppendDoesNotModifyInput", testAppendDoesNotModifyInput},
		{"RecentAndAfter", testRecentAndAfter},
		{"ListEventsPages", testListEventsPages},
		{"StateScopes", testStateScopes},
		{"TempKeysNeverStored", testTempKeysNeverStored},
		{"NullDeletes", testNullDeletes},
		{"ListSessionsPages", testListSessionsPages},
		{"DeleteCascades", testDeleteCascades},
		{"ArtifactVersions", testArtifactVersions},
		{"UserArtifactsShared", testUserArtifactsShared},
		{"ListArtifactsPages", testListArtifactsPages},
		{"DeleteArtifact", testDeleteArtifact},
		{"DeleteArtifactVersion", testDeleteArtifactVersion},
		{"UserArtifactsNoSession", testUserArtifactsNoSession},
		{"GetSessionAfterTime", testGetSessionAfterTime},
		{"ListEventsAfterTime", testListEventsAfterTime},
		{"EventsAfterZeroTime", testEventsAfterZeroTime},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ToolCallLedger", testToolCallLedger},
		{"MalformedPageTokens", testMalformedPageTokens},
		{"RunAppendRunEvent", testRunAppendRunEvent},
		{"RunPutAndGet", testRunPutAndGet},
		{"RunListPages", testRunListPages},
		{"RunRequestIDUnique", testRunRequestIDUnique},
		{"RunFindByRequest", testRunFindByRequest},
		{"RunUnfinished", testRunUnfinished},
		{"RunPutLater", testRunPutLater},
		{"RunPutLaterOrder", testRunPutLaterOrder},
		{"RunDeleteCascades", testRunDeleteCascades},
		{"RunNotFound", testRunNotFound},
		{"RunInvalid", testRunInvalid},
		{"RunConcurrent", testRunConcurrent},
		{"RunListAcross", testRunListAcross},
		{"RunListAcrossPagesStable", testRunListAcrossPagesStable},
		{"RunListAcrossInvalid", testRunListAcrossInvalid},
		{"RunListAcrossFilteredPages", testRunListAcrossFilteredPages},
		{"Closed", testClosed},
		{"RunClosed", testRunClosed},
		{"PagesBoundedByBytes", testPagesBoundedByBytes},
		{"GetSessionBoundedByBytes", testGetSessionBoundedByBytes},
		{"AppendEventOnce", testAppendEventOnce},
		{"Compaction", testCompaction},
		{"EventAllFields", testEventAllFields},
		{"SpendInvalid", testSpendInvalid},
		{"SpendClosed", testSpendClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

func key(app, user, sess string) store.SessionKey {
	return store.SessionKey{App: app, User: user, Session: sess}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func create(t *testing.T, s store.Store, k store.SessionKey, state map[string]any) *agentrunnerv1.Session {
	t.Helper()
	var st *structpb.Struct
	if state != nil {
		st = mustStruct(t, state)
	}
	sess, err := s.CreateSession(t.Context(), k, st)
	if err != nil {
		t.Fatalf("CreateSession(%s): %v", k, err)
	}
	return sess
}

func textEvent(author, text string, delta map[string]any) *agentrunnerv1.Event {
	ev := &agentrunnerv1.Event{
		Author:  author,
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}},
	}
	if delta != nil {
		st, err := structpb.NewStruct(delta)
		if err != nil {
			panic(err)
		}
		ev.Actions = &agentrunnerv1.EventActions{StateDelta: st}
	}
	return ev
}

func appendEv(t *testing.T, s store.Store, k store.SessionKey, ev *agentrunnerv1.Event) *agentrunnerv1.Event {
	t.Helper()
	got, err := s.AppendEvent(t.Context(), k, ev)
	if err != nil {
		t.Fatalf("AppendEvent(%s): %v", k, err)
	}
	return got
}

func get(t *testing.T, s store.Store, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event) {
	t.Helper()
	sess, evs, err := s.GetSession(t.Context(), k, opts)
	if err != nil {
		t.Fatalf("GetSession(%s): %v", k, err)
	}
	return sess, evs
}

func stateOf(sess *agentrunnerv1.Session) map[string]any { return sess.GetState().AsMap() }

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func seqs(evs []*agentrunnerv1.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, ev := range evs {
		out[i] = ev.GetSequence()
	}
	return out
}

func equalSeqs(a []uint64, b ...uint64) bool {
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

func testCreateAndGet(t *testing.T, s store.Store) {
	k := key("app", "alice", "s1")
	created := create(t, s, k, map[string]any{"color": "blue", "n": 3})
	if created.GetSessionId() != "s1" || created.GetAppName() != "app" || created.GetUserId() != "alice" {
		t.Fatalf("created session has key %s/%s/%s", created.GetAppName(), created.GetUserId(), created.GetSessionId())
	}
	if created.GetCreateTime() == nil || created.GetUpdateTime() == nil {
		t.Fatal("created session has no create/update time")
	}
	got, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 0 || got.GetLastSequence() != 0 {
		t.Fatalf("new session has %d events, last_sequence %d", len(evs), got.GetLastSequence())
	}
	if st := stateOf(got); st["color"] != "blue" || st["n"] != 3.0 {
		t.Fatalf("state = %v", st)
	}
}

func testCreateGeneratesID(t *testing.T, s store.Store) {
	a := create(t, s, key("app", "u", ""), nil)
	b := create(t, s, key("app", "u", ""), nil)
	if a.GetSessionId() == "" || a.GetSessionId() == b.GetSessionId() {
		t.Fatalf("generated ids %q and %q", a.GetSessionId(), b.GetSessionId())
	}
	get(t, s, key("app", "u", a.GetSessionId()), store.GetOptions{})
}

func testCreateAlreadyExists(t *testing.T, s store.Store) {
	k := key("app", "u", "dup")
	create(t, s, k, map[string]any{"v": 1})
	appendEv(t, s, k, textEvent("agent", "hi", nil))
	_, err := s.CreateSession(t.Context(), k, mustStruct(t, map[string]any{"v": 2}))
	wantErr(t, err, store.ErrAlreadyExists, "second CreateSession")
	got, evs := get(t, s, k, store.GetOptions{})
	if stateOf(got)["v"] != 1.0 || len(evs) != 1 {
		t.Fatalf("failed create changed the session: state %v, %d events", stateOf(got), len(evs))
	}
	// The same id under another user or app is a different session.
	create(t, s, key("app", "other", "dup"), nil)
	create(t, s, key("app2", "u", "dup"), nil)
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	create(t, s, key("app", "u", "exists"), nil)
	k := key("app", "u", "missing")
	_, _, err := s.GetSession(ctx, k, store.GetOptions{})
	wantErr(t, err, store.ErrNotFound, "GetSession")
	_, err = s.AppendEvent(ctx, k, textEvent("a", "x", nil))
	wantErr(t, err, store.ErrNotFound, "AppendEvent")
	_, _, err = s.ListEvents(ctx, k, store.EventFilter{}, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListEvents")
	wantErr(t, s.DeleteSession(ctx, k), store.ErrNotFound, "DeleteSession")
	_, err = s.SaveArtifact(ctx, k, "f.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}})
	wantErr(t, err, store.ErrNotFound, "SaveArtifact on a missing session")
	ek := key("app", "u", "exists")
	_, _, err = s.LoadArtifact(ctx, ek, "nope.txt", 0)
	wantErr(t, err, store.ErrNotFound, "LoadArtifact of a missing artifact")
	_, _, err = s.ListArtifactVersions(ctx, ek, "nope.txt", store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListArtifactVersions of a missing artifact")
	wantErr(t, s.DeleteArtifact(ctx, ek, "nope.txt", 0), store.ErrNotFound, "DeleteArtifact of a missing artifact")
	_, _, err = s.ListArtifacts(ctx, k, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListArtifacts on a missing session")
}

func testInvalidKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, k := range []store.SessionKey{key("", "u", "s"), key("a", "", "s")} {
		_, err := s.CreateSession(ctx, k, nil)
		wantErr(t, err, store.ErrInvalidArgument, fmt.Sprintf("CreateSession(%q)", k))
	}
	_, _, err := s.GetSession(ctx, key("a", "u", ""), store.GetOptions{})
	wantErr(t, err, store.ErrInvalidArgument, "GetSession with empty session id")
	_, _, err = s.ListSessions(ctx, "", "", store.Page{})
	wantErr(t, err, store.ErrInvalidArgument, "ListSessions with empty app")
	k := key("app", "u", "s")
	create(t, s, k, nil)
	_, err = s.SaveArtifact(ctx, k, "", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}})
	wantErr(t, err, store.ErrInvalidArgument, "SaveArtifact with empty filename")
	_, err = s.SaveArtifact(ctx, k, "f", &agentrunnerv1.Part{})
	wantErr(t, err, store.ErrInvalidArgument, "SaveArtifact with an empty part")
	_, err = s.AppendEvent(ctx, k, nil)
	wantErr(t, err, store.ErrInvalidArgument, "AppendEvent(nil)")
}

func testAppendAssignsSequence(t *testing.T, s store.Store) {
	k := key("app", "u", "seq")
	create(t, s, k, nil)
	for i := 1; i <= 5; i++ {
		ev := textEvent("agent", fmt.Sprint("m", i), nil)
		ev.Sequence = 99 // ignored: the store assigns it
		got := appendEv(t, s, k, ev)
		if got.GetSequence() != uint64(i) {
			t.Fatalf("append %d got sequence %d", i, got.GetSequence())
		}
		if got.GetId() == "" || got.GetTimestamp() == nil {
			t.Fatalf("append %d: id %q, timestamp %v", i, got.GetId(), got.GetTimestamp())
		}
	}
	ev := textEvent("agent", "with id", nil)
	ev.Id = "my-id"
	if got := appendEv(t, s, k, ev); got.GetId() != "my-id" {
		t.Fatalf("id not kept: %q", got.GetId())
	}
	sess, evs := get(t, s, k, store.GetOptions{})
	if sess.GetLastSequence() != 6 || !equalSeqs(seqs(evs), 1, 2, 3, 4, 5, 6) {
		t.Fatalf("last_sequence %d, sequences %v", sess.GetLastSequence(), seqs(evs))
	}
	if evs[2].GetContent().GetParts()[0].GetText() != "m3" || evs[2].GetAuthor() != "agent" {
		t.Fatalf("event 3 = %v", evs[2])
	}
	// Another session counts on its own.
	k2 := key("app", "u", "seq2")
	create(t, s, k2, nil)
	if got := appendEv(t, s, k2, textEvent("a", "x", nil)); got.GetSequence() != 1 {
		t.Fatalf("second session starts at %d", got.GetSequence())
	}
}

func testAppendRejectsPartial(t *testing.T, s store.Store) {
	k := key("app", "u", "partial")
	create(t, s, k, nil)
	ev := textEvent("agent", "chunk", map[string]any{"k": "v"})
	ev.Partial = true
	_, err := s.AppendEvent(t.Context(), k, ev)
	wantErr(t, err, store.ErrInvalidArgument, "AppendEvent(partial)")
	sess, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 0 || sess.GetLastSequence() != 0 || len(stateOf(sess)) != 0 {
		t.Fatalf("a rejected partial event left %d events, state %v", len(evs), stateOf(sess))
	}
}

func testAppendDoesNotModifyInput(t *testing.T, s store.Store) {
	k := key("app", "u", "immut")
	create(t, s, k, nil)
	ev := textEvent("agent", "x", map[string]any{"temp:t": 1, "k": 2})
	before := proto.Clone(ev)
	appendEv(t, s, k, ev)
	if !proto.Equal(before, ev) {
		t.Fatalf("AppendEvent modified its input:\nbefore %v\nafter  %v", before, ev)
	}
}

func testRecentAndAfter(t *testing.T, s store.Store) {
	k := key("app", "u", "recent")
	create(t, s, k, nil)
	for i := 1; i <= 10; i++ {
		appendEv(t, s, k, textEvent("agent", fmt.Sprint(i), nil))
	}
	// A neighbouring session must not leak into the walks.
	k2 := key("app", "u", "recent2")
	create(t, s, k2, nil)
	appendEv(t, s, k2, textEvent("agent", "other", nil))
	tests := []struct {
		opts store.GetOptions
		want []uint64
	}{
		{store.GetOptions{}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{store.GetOptions{NumRecentEvents: 3}, []uint64{8, 9, 10}},
		{store.GetOptions{NumRecentEvents: 20}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{store.GetOptions{AfterSequence: 7}, []uint64{8, 9, 10}},
		{store.GetOptions{AfterSequence: 10}, []uint64{}},
		{store.GetOptions{AfterSequence: 50}, []uint64{}},
		{store.GetOptions{NumRecentEvents: 5, AfterSequence: 8}, []uint64{9, 10}},
		{store.GetOptions{NumRecentEvents: 2, AfterSequence: 3}, []uint64{9, 10}},
	}
	for _, tc := range tests {
		_, evs := get(t, s, k, tc.opts)
		if !equalSeqs(seqs(evs), tc.want...) {
			t.Errorf("GetSession(%+v) sequences = %v, want %v", tc.opts, seqs(evs), tc.want)
		}
	}
}

func testListEventsPages(t *testing.T, s store.Store) {
	k := key("app", "u", "pages")
	create(t, s, k, nil)
	for i := 1; i <= 7; i++ {
		appendEv(t, s, k, textEvent("agent", fmt.Sprint(i), nil))
	}
	var all []uint64
	page := store.Page{Size: 3}
	for n := 0; ; n++ {
		if n > 5 {
			t.Fatal("ListEvents does not terminate")
		}
		evs, next, err := s.ListEvents(t.Context(), k, store.EventFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, seqs(evs)...)
		if next == "" {
			break
		}
		page.Token = next
	}
	if !equalSeqs(all, 1, 2, 3, 4, 5, 6, 7) {
		t.Fatalf("paged sequences = %v", all)
	}
	evs, next, err := s.ListEvents(t.Context(), k, store.EventFilter{AfterSequence: 5}, store.Page{})
	if err != nil || next != "" || !equalSeqs(seqs(evs), 6, 7) {
		t.Fatalf("ListEvents(after 5) = %v, %q, %v", seqs(evs), next, err)
	}
}

func testStateScopes(t *testing.T, s store.Store) {
	a1, a2 := key("app", "alice", "s1"), key("app", "alice", "s2")
	b1 := key("app", "bob", "s1")
	other := key("other", "alice", "s1")
	create(t, s, a1, map[string]any{"app:theme": "dark", "user:lang": "fr", "topic": "tea"})
	create(t, s, a2, nil)
	create(t, s, b1, nil)
	create(t, s, other, nil)

	check := func(k store.SessionKey, want map[string]any) {
		t.Helper()
		sess, _ := get(t, s, k, store.GetOptions{})
		got := stateOf(sess)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("state of %s = %v, want %v", k, got, want)
		}
	}
	check(a1, map[string]any{"app:theme": "dark", "user:lang": "fr", "topic": "tea"})
	check(a2, map[string]any{"app:theme": "dark", "user:lang": "fr"})
	check(b1, map[string]any{"app:theme": "dark"})
	check(other, map[string]any{})

	appendEv(t, s, b1, textEvent("agent", "x", map[string]any{"app:theme": "light", "user:lang": "de", "topic": "coffee"}))
	check(a1, map[string]any{"app:theme": "light", "user:lang": "fr", "topic": "tea"})
	check(b1, map[string]any{"app:theme": "light", "user:lang": "de", "topic": "coffee"})
	appendEv(t, s, a2, textEvent("agent", "x", map[string]any{"user:lang": "en"}))
	check(a1, map[string]any{"app:theme": "light", "user:lang": "en", "topic": "tea"})

	// Deleting a session keeps the shared scopes.
	if err := s.DeleteSession(t.Context(), a1); err != nil {
		t.Fatal(err)
	}
	check(a2, map[string]any{"app:theme": "light", "user:lang": "en"})
	// ListSessions shows merged state too.
	list, _, err := s.ListSessions(t.Context(), "app", "bob", store.Page{})
	if err != nil || len(list) != 1 || stateOf(list[0])["app:theme"] != "light" || stateOf(list[0])["topic"] != "coffee" {
		t.Fatalf("ListSessions(bob) = %v, %v", list, err)
	}
}

func testTempKeysNeverStored(t *testing.T, s store.Store) {
	k := key("app", "u", "temp")
	create(t, s, k, map[string]any{"temp:x": 1, "keep": true})
	got := appendEv(t, s, k, textEvent("agent", "x", map[string]any{"temp:y": 2, "k": "v"}))
	if _, ok := got.GetActions().GetStateDelta().GetFields()["temp:y"]; ok {
		t.Fatal("returned event still carries a temp: key")
	}
	if got.GetActions().GetStateDelta().GetFields()["k"].GetStringValue() != "v" {
		t.Fatal("returned event lost its non-temp key")
	}
	onlyTemp := appendEv(t, s, k, textEvent("agent", "x", map[string]any{"temp:z": 3}))
	if n := len(onlyTemp.GetActions().GetStateDelta().GetFields()); n != 0 {
		t.Fatalf("event with only temp keys stored %d keys", n)
	}
	sess, evs := get(t, s, k, store.GetOptions{})
	if st := stateOf(sess); len(st) != 2 || st["keep"] != true || st["k"] != "v" {
		t.Fatalf("state = %v", st)
	}
	for _, ev := range evs {
		for key := range ev.GetActions().GetStateDelta().GetFields() {
			if store.ScopeOf(key) == store.ScopeTemp {
				t.Fatalf("stored event %d has key %s", ev.GetSequence(), key)
			}
		}
	}
}

func testNullDeletes(t *testing.T, s store.Store) {
	k := key("app", "u", "null")
	create(t, s, k, map[string]any{"a": 1, "b": 2, "app:x": 1, "user:y": 1})
	appendEv(t, s, k, textEvent("agent", "x", map[string]any{"a": nil, "app:x": nil, "user:y": nil, "c": 3}))
	sess, _ := get(t, s, k, store.GetOptions{})
	if st := stateOf(sess); fmt.Sprint(st) != fmt.Sprint(map[string]any{"b": 2.0, "c": 3.0}) {
		t.Fatalf("state after null deletes = %v", st)
	}
}

func testListSessionsPages(t *testing.T, s store.Store) {
	want := map[string]bool{}
	for _, u := range []string{"u1", "u2"} {
		for i := range 5 {
			sess := create(t, s, key("app", u, fmt.Sprintf("s%02d", i)), nil)
			want[u+"/"+sess.GetSessionId()] = true
		}
	}
	create(t, s, key("app2", "u1", "elsewhere"), nil)
	create(t, s, key("app", "u10", "prefix-neighbour"), nil)
	want["u10/prefix-neighbour"] = true

	collect := func(user string, size int) []string {
		var out []string
		page := store.Page{Size: size}
		for n := 0; ; n++ {
			if n > 20 {
				t.Fatal("ListSessions does not terminate")
			}
			list, next, err := s.ListSessions(t.Context(), "app", user, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) > size {
				t.Fatalf("page of %d sessions, size %d", len(list), size)
			}
			for _, sess := range list {
				if sess.GetAppName() != "app" {
					t.Fatalf("listed %s from another app", sess.GetAppName())
				}
				out = append(out, sess.GetUserId()+"/"+sess.GetSessionId())
			}
			if next == "" {
				return out
			}
			page.Token = next
		}
	}
	u1 := collect("u1", 2)
	if len(u1) != 5 || u1[0] != "u1/s00" || u1[4] != "u1/s04" {
		t.Fatalf("u1 sessions = %v", u1)
	}
	all := collect("", 3)
	if len(all) != len(want) {
		t.Fatalf("all sessions = %v, want %d", all, len(want))
	}
	for i, id := range all {
		if !want[id] {
			t.Fatalf("unexpected session %s", id)
		}
		if i > 0 && all[i-1] >= id && all[i-1][:3] == id[:3] {
			t.Fatalf("not ordered: %s before %s", all[i-1], id)
		}
	}
	if list, next, err := s.ListSessions(t.Context(), "app", "nobody", store.Page{}); err != nil || len(list) != 0 || next != "" {
		t.Fatalf("ListSessions(nobody) = %v, %q, %v", list, next, err)
	}
}

func testDeleteCascades(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, keep := key("app", "u", "doomed"), key("app", "u", "kept")
	create(t, s, k, nil)
	create(t, s, keep, nil)
	for i := range 3 {
		appendEv(t, s, k, textEvent("agent", fmt.Sprint(i), nil))
		appendEv(t, s, keep, textEvent("agent", fmt.Sprint(i), nil))
	}
	text := func(s string) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
	}
	for _, name := range []string{"a.txt", "user:shared.txt"} {
		if _, err := s.SaveArtifact(ctx, k, name, text(name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SaveArtifact(ctx, keep, "a.txt", text("kept")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, k); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.GetSession(ctx, k, store.GetOptions{})
	wantErr(t, err, store.ErrNotFound, "GetSession after delete")
	// Recreating the id starts from nothing: no old events, no old artifacts.
	create(t, s, k, nil)
	sess, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 0 || sess.GetLastSequence() != 0 {
		t.Fatalf("recreated session has %d old events", len(evs))
	}
	if got := appendEv(t, s, k, textEvent("agent", "new", nil)); got.GetSequence() != 1 {
		t.Fatalf("recreated session appends at %d", got.GetSequence())
	}
	_, _, err = s.LoadArtifact(ctx, k, "a.txt", 0)
	wantErr(t, err, store.ErrNotFound, "session artifact after delete")
	// The user's artifact and the other session survive.
	if p, _, err := s.LoadArtifact(ctx, k, "user:shared.txt", 0); err != nil || p.GetText() != "user:shared.txt" {
		t.Fatalf("user artifact after delete: %v, %v", p, err)
	}
	if _, evs := get(t, s, keep, store.GetOptions{}); len(evs) != 3 {
		t.Fatalf("other session has %d events", len(evs))
	}
	if p, _, err := s.LoadArtifact(ctx, keep, "a.txt", 0); err != nil || p.GetText() != "kept" {
		t.Fatalf("other session's artifact: %v, %v", p, err)
	}
}

func testArtifactVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "arts")
	create(t, s, k, nil)
	blob := func(b string) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: []byte(b)}}}
	}
	for i := int64(1); i <= 3; i++ {
		v, err := s.SaveArtifact(ctx, k, "pic.png", blob(fmt.Sprint("v", i)))
		if err != nil {
			t.Fatal(err)
		}
		if v.GetVersion() != i || v.GetFilename() != "pic.png" || v.GetMimeType() != "image/png" || v.GetSizeBytes() != 2 || v.GetSha256() == "" {
			t.Fatalf("save %d returned %v", i, v)
		}
	}
	p, meta, err := s.LoadArtifact(ctx, k, "pic.png", 0)
	if err != nil || string(p.GetInlineData().GetData()) != "v3" || meta.GetVersion() != 3 {
		t.Fatalf("latest = %v %v %v", p, meta, err)
	}
	p, meta, err = s.LoadArtifact(ctx, k, "pic.png", 1)
	if err != nil || string(p.GetInlineData().GetData()) != "v1" || meta.GetVersion() != 1 {
		t.Fatalf("version 1 = %v %v %v", p, meta, err)
	}
	_, _, err = s.LoadArtifact(ctx, k, "pic.png", 4)
	wantErr(t, err, store.ErrNotFound, "LoadArtifact(version 4)")
	_, _, err = s.LoadArtifact(ctx, k, "pic.png", -1)
	wantErr(t, err, store.ErrInvalidArgument, "LoadArtifact(version -1)")

	var versions []int64
	page := store.Page{Size: 2}
	for n := 0; ; n++ {
		if n > 5 {
			t.Fatal("ListArtifactVersions does not terminate")
		}
		vs, next, err := s.ListArtifactVersions(ctx, k, "pic.png", page)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			versions = append(versions, v.GetVersion())
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if fmt.Sprint(versions) != "[3 2 1]" {
		t.Fatalf("versions = %v, want newest first", versions)
	}
	// Names that share a prefix are separate artifacts.
	if v, err := s.SaveArtifact(ctx, k, "pic.png.bak", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "t"}}); err != nil || v.GetVersion() != 1 || v.GetMimeType() != "text/plain" {
		t.Fatalf("save pic.png.bak = %v, %v", v, err)
	}
	// Versions are per session.
	k2 := key("app", "u", "arts2")
	create(t, s, k2, nil)
	if v, err := s.SaveArtifact(ctx, k2, "pic.png", blob("x")); err != nil || v.GetVersion() != 1 {
		t.Fatalf("other session's first version = %v, %v", v, err)
	}
}

func testUserArtifactsShared(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1, a2, b1 := key("app", "alice", "s1"), key("app", "alice", "s2"), key("app", "bob", "s1")
	for _, k := range []store.SessionKey{a1, a2, b1} {
		create(t, s, k, nil)
	}
	text := func(s string) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
	}
	if _, err := s.SaveArtifact(ctx, a1, "user:profile", text("one")); err != nil {
		t.Fatal(err)
	}
	v, err := s.SaveArtifact(ctx, a2, "user:profile", text("two"))
	if err != nil || v.GetVersion() != 2 {
		t.Fatalf("second save from another session = %v, %v; want version 2", v, err)
	}
	if p, _, err := s.LoadArtifact(ctx, a1, "user:profile", 0); err != nil || p.GetText() != "two" {
		t.Fatalf("load from first session = %v, %v", p, err)
	}
	_, _, err = s.LoadArtifact(ctx, b1, "user:profile", 0)
	wantErr(t, err, store.ErrNotFound, "another user's user: artifact")
	if _, err := s.SaveArtifact(ctx, a1, "notes", text("n")); err != nil {
		t.Fatal(err)
	}
	list, _, err := s.ListArtifacts(ctx, a2, store.Page{})
	if err != nil || len(list) != 1 || list[0].GetFilename() != "user:profile" || list[0].GetVersion() != 2 {
		t.Fatalf("ListArtifacts(a2) = %v, %v", list, err)
	}
}

func testListArtifactsPages(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "list")
	create(t, s, k, nil)
	text := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}}
	names := []string{"b", "user:a", "a", "user:z", "c", "zz"}
	for _, n := range names {
		for range 2 {
			if _, err := s.SaveArtifact(ctx, k, n, text); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	page := store.Page{Size: 4}
	for n := 0; ; n++ {
		if n > 5 {
			t.Fatal("ListArtifacts does not terminate")
		}
		list, next, err := s.ListArtifacts(ctx, k, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.GetVersion() != 2 {
				t.Fatalf("%s listed at version %d, want latest (2)", a.GetFilename(), a.GetVersion())
			}
			got = append(got, a.GetFilename())
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if fmt.Sprint(got) != "[a b c user:a user:z zz]" {
		t.Fatalf("artifacts = %v", got)
	}
}

func testDeleteArtifact(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "delart")
	create(t, s, k, nil)
	text := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}}
	for range 3 {
		if _, err := s.SaveArtifact(ctx, k, "f", text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SaveArtifact(ctx, k, "g", text); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteArtifact(ctx, k, "f", 0); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.LoadArtifact(ctx, k, "f", 2)
	wantErr(t, err, store.ErrNotFound, "deleted version")
	if list, _, err := s.ListArtifacts(ctx, k, store.Page{}); err != nil || len(list) != 1 || list[0].GetFilename() != "g" {
		t.Fatalf("after delete: %v, %v", list, err)
	}
	if v, err := s.SaveArtifact(ctx, k, "f", text); err != nil || v.GetVersion() != 1 {
		t.Fatalf("save after delete = %v, %v; want version 1", v, err)
	}
}

func testConcurrentAppends(t *testing.T, s store.Store) {
	const sessions, perSession = 8, 25
	for i := range sessions {
		create(t, s, key("app", "u", fmt.Sprint("c", i)), nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*perSession)
	for i := range sessions {
		// Two writers per session: sequences must stay dense and unique.
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := key("app", "u", fmt.Sprint("c", i))
				for j := range perSession / 2 {
					_, err := s.AppendEvent(t.Context(), k, textEvent("agent", fmt.Sprint(w, j), map[string]any{"user:count": float64(j)}))
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range sessions {
		sess, evs := get(t, s, key("app", "u", fmt.Sprint("c", i)), store.GetOptions{})
		n := 2 * (perSession / 2)
		if len(evs) != n || sess.GetLastSequence() != uint64(n) {
			t.Fatalf("session %d: %d events, last_sequence %d, want %d", i, len(evs), sess.GetLastSequence(), n)
		}
		for j, ev := range evs {
			if ev.GetSequence() != uint64(j+1) {
				t.Fatalf("session %d: event %d has sequence %d", i, j, ev.GetSequence())
			}
		}
	}
}

func testMalformedPageTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "tok")
	create(t, s, k, nil)
	create(t, s, key("app", "v", "tok"), nil)
	_, _, err := s.ListSessions(ctx, "app", "u", store.Page{Token: "!!not base64"})
	wantErr(t, err, store.ErrInvalidArgument, "ListSessions(garbage token)")
	// A token from another listing is refused rather than misread.
	_, next, err := s.ListSessions(ctx, "app", "", store.Page{Size: 1})
	if err != nil || next == "" {
		t.Fatalf("first page: %q, %v", next, err)
	}
	_, _, err = s.ListSessions(ctx, "other-app", "", store.Page{Token: next})
	wantErr(t, err, store.ErrInvalidArgument, "ListSessions(token of another app)")
	_, _, err = s.ListEvents(ctx, k, store.EventFilter{}, store.Page{Token: "%%%"})
	wantErr(t, err, store.ErrInvalidArgument, "ListEvents(garbage token)")
}

func testClosed(t *testing.T, s store.Store) {
	k := key("app", "u", "closed")
	create(t, s, k, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.AppendEvent(t.Context(), k, textEvent("a", "x", nil))
	wantErr(t, err, store.ErrClosed, "AppendEvent after Close")
	_, _, err = s.GetSession(t.Context(), k, store.GetOptions{})
	wantErr(t, err, store.ErrClosed, "GetSession after Close")
}

// testRunClosed: every run method after Close returns ErrClosed, and
// PutRunLater neither panics nor blocks.
func testRunClosed(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "closed")
	create(t, s, k, nil)
	run := runRec(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	run.RequestId = "r1"
	putRun(t, s, run)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.PutRunLater(run)
	calls := []struct {
		name string
		call func() error
	}{
		{"PutRun", func() error { return s.PutRun(ctx, run) }},
		{"AppendRunEvent", func() error { _, _, err := s.AppendRunEvent(ctx, k, textEvent("a", "x", nil), run); return err }},
		{"GetRun", func() error { _, err := s.GetRun(ctx, "e-1"); return err }},
		{"FindRunByRequest", func() error { _, err := s.FindRunByRequest(ctx, k, "r1"); return err }},
		{"ListRuns", func() error { _, _, err := s.ListRuns(ctx, k, store.Page{}); return err }},
		{"ListUnfinishedRuns", func() error { _, err := s.ListUnfinishedRuns(ctx); return err }},
	}
	for _, c := range calls {
		wantErr(t, c.call(), store.ErrClosed, c.name+" after Close")
	}
}

func funcPart(call bool, id, name string) *agentrunnerv1.Part {
	if call {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name}}}
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name}}}
}

// supersededPart is the runner's interim result for waiting call id.
func supersededPart(id, name string) *agentrunnerv1.Part {
	resp, _ := structpb.NewStruct(map[string]any{"status": "cancelled", store.SupersededKey: "run2"})
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: resp}}}
}

// testToolCallLedger: calls open with their event, answers close them (a
// waiting call only by the user's), second answers change nothing (but a
// late answer to a superseded waiting call replaces its interim result), and the
// ledger goes with its session.
func testToolCallLedger(t *testing.T, s store.Store) {
	k := key("app", "u", "s")
	create(t, s, k, nil)
	events := []*agentrunnerv1.Event{
		{Author: "bot", LongRunningToolIds: []string{"b"}, Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(true, "a", "lookup"), funcPart(true, "b", "approve")}}},
		{Author: "bot", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(false, "a", "lookup"), funcPart(false, "b", "approve")}}},
		{Author: "user", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(false, "b", "approve"), funcPart(false, "a", "lookup")}}},
		// A waiting call first closed by the interim result of its
		// superseding takes the caller's late answer instead.
		{Author: "bot", LongRunningToolIds: []string{"c"}, Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(true, "c", "approve")}}},
		{Author: "user", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{supersededPart("c", "approve")}}},
		{Author: "user", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(false, "c", "approve")}}},
	}
	for _, ev := range events {
		if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
	calls, err := s.ListToolCalls(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%s %s #%d->#%d waits=%v", c.GetCallId(), c.GetTool(), c.GetCallSequence(), c.GetResponseSequence(), c.GetWaitsForCaller()))
	}
	want := []string{"a lookup #1->#2 waits=false", "b approve #1->#3 waits=true", "c approve #4->#6 waits=true"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ledger %q, want %q", got, want)
	}
	if err := s.DeleteSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListToolCalls(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ledger of a deleted session: %v", err)
	}
	create(t, s, k, nil)
	if calls, err := s.ListToolCalls(t.Context(), k); err != nil || len(calls) != 0 {
		t.Fatalf("a recreated session has %d ledger entries, %v", len(calls), err)
	}
}

// Run records.

var (
	runPending   = agentrunnerv1.RunStatus_RUN_STATUS_PENDING
	runRunning   = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	runInput     = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED
	runSucceeded = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	runFailed    = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
	runCancelled = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
)

// runEpoch is the create_time of the runs the tests make, plus minutes.
var runEpoch = time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)

func runRec(k store.SessionKey, id string, minute int, status agentrunnerv1.RunStatus) *agentrunnerv1.Run {
	return &agentrunnerv1.Run{
		RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status:     status,
		CreateTime: timestamppb.New(runEpoch.Add(time.Duration(minute) * time.Minute)),
	}
}

// withStatus returns a copy of run with another status.
func withStatus(run *agentrunnerv1.Run, st agentrunnerv1.RunStatus) *agentrunnerv1.Run {
	out := proto.CloneOf(run)
	out.Status = st
	return out
}

func putRun(t *testing.T, s store.Store, run *agentrunnerv1.Run) {
	t.Helper()
	if err := s.PutRun(t.Context(), run); err != nil {
		t.Fatalf("PutRun(%s): %v", run.GetRunId(), err)
	}
}

func getRun(t *testing.T, s store.Store, id string) *agentrunnerv1.Run {
	t.Helper()
	run, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return run
}

func appendRun(t *testing.T, s store.Store, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run) {
	t.Helper()
	gotEv, gotRun, err := s.AppendRunEvent(t.Context(), k, ev, run)
	if err != nil {
		t.Fatalf("AppendRunEvent(%s): %v", run.GetRunId(), err)
	}
	return gotEv, gotRun
}

func runIDs(runs []*agentrunnerv1.Run) string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.GetRunId()
	}
	return strings.Join(ids, " ")
}

func unfinishedIDs(t *testing.T, s store.Store) string {
	t.Helper()
	runs, err := s.ListUnfinishedRuns(t.Context())
	if err != nil {
		t.Fatalf("ListUnfinishedRuns: %v", err)
	}
	return runIDs(runs)
}

func wantRun(t *testing.T, got, want *agentrunnerv1.Run, what string) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// testRunAppendRunEvent: the event is stored as AppendEvent stores it,
// the run with the event's sequence as last_sequence (and as
// first_sequence when it had none), both in one write.
func testRunAppendRunEvent(t *testing.T, s store.Store) {
	k := key("app", "u", "runs")
	create(t, s, k, nil)
	appendEv(t, s, k, textEvent("user", "before the run", nil))
	run := runRec(k, "e-1", 0, runRunning)
	run.RequestId, run.StartTime = "r1", timestamppb.New(runEpoch.Add(time.Second))
	ev := textEvent("agent", "hello", map[string]any{"topic": "tea", "temp:x": 1})
	ev.InvocationId = "e-1"
	evBefore, runBefore := proto.Clone(ev), proto.Clone(run)
	gotEv, gotRun := appendRun(t, s, k, ev, run)
	if !proto.Equal(ev, evBefore) || !proto.Equal(run, runBefore) {
		t.Fatal("AppendRunEvent modified its input")
	}
	if gotEv.GetSequence() != 2 || gotEv.GetId() == "" || gotEv.GetTimestamp() == nil {
		t.Fatalf("stored event: sequence %d, id %q, timestamp %v", gotEv.GetSequence(), gotEv.GetId(), gotEv.GetTimestamp())
	}
	if _, ok := gotEv.GetActions().GetStateDelta().GetFields()["temp:x"]; ok {
		t.Fatal("stored event keeps a temp: key")
	}
	want := proto.CloneOf(run)
	want.FirstSequence, want.LastSequence = 2, 2
	wantRun(t, gotRun, want, "returned run")
	wantRun(t, getRun(t, s, "e-1"), want, "GetRun")
	sess, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 2 || !proto.Equal(evs[1], gotEv) || stateOf(sess)["topic"] != "tea" {
		t.Fatalf("session after AppendRunEvent: %d events, state %v", len(evs), stateOf(sess))
	}
	// A later event moves last_sequence only.
	gotEv2, gotRun2 := appendRun(t, s, k, textEvent("agent", "more", nil), gotRun)
	if gotEv2.GetSequence() != 3 || gotRun2.GetFirstSequence() != 2 || gotRun2.GetLastSequence() != 3 {
		t.Fatalf("second append: event %d, run %d..%d", gotEv2.GetSequence(), gotRun2.GetFirstSequence(), gotRun2.GetLastSequence())
	}
	// The returned run is a copy of its own.
	gotRun2.Status = runFailed
	if got := getRun(t, s, "e-1"); got.GetStatus() != runRunning || got.GetLastSequence() != 3 {
		t.Fatalf("stored run is %v after the returned copy changed", got)
	}
}

func fullRun(k store.SessionKey) *agentrunnerv1.Run {
	run := runRec(k, "e-full", 0, runPending)
	run.StartTime = timestamppb.New(runEpoch.Add(time.Second))
	run.EndTime = timestamppb.New(runEpoch.Add(time.Minute))
	run.FirstSequence, run.LastSequence = 4, 9
	run.Error = &agentrunnerv1.Status{Code: 13, Message: "boom"}
	run.RequestId, run.RequestDigest = "req-1", "abc123"
	run.PendingCallIds = []string{"c1", "c2"}
	run.Usage = &agentrunnerv1.UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15}
	run.MultitaskStrategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	run.OnDisconnect = agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE
	delta, _ := structpb.NewStruct(map[string]any{"k": "v"})
	run.Input = &agentrunnerv1.RunInput{
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}},
		StateDelta: delta,
		RunConfig:  &agentrunnerv1.RunConfig{MaxLlmCalls: 3},
	}
	return run
}

// testRunPutAndGet: every field round-trips; a rewrite replaces the
// record but never its create_time.
func testRunPutAndGet(t *testing.T, s store.Store) {
	k := key("app", "u", "put")
	create(t, s, k, nil)
	run := fullRun(k)
	before := proto.Clone(run)
	putRun(t, s, run)
	if !proto.Equal(run, before) {
		t.Fatal("PutRun modified its input")
	}
	got := getRun(t, s, "e-full")
	wantRun(t, got, run, "GetRun")
	got.Status = runFailed
	wantRun(t, getRun(t, s, "e-full"), run, "GetRun after its result changed")

	next := withStatus(run, runRunning)
	next.Input = nil
	next.CreateTime = timestamppb.New(runEpoch.Add(time.Hour))
	putRun(t, s, next)
	want := proto.CloneOf(next)
	want.CreateTime = run.GetCreateTime()
	wantRun(t, getRun(t, s, "e-full"), want, "rewritten run (create_time kept)")
	list, _, err := s.ListRuns(t.Context(), k, store.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListRuns after a rewrite = %s, %v", runIDs(list), err)
	}
	wantRun(t, list[0], want, "listed run")
}

// testRunListPages: newest first by create_time, page after page, and
// only the session's own runs.
func testRunListPages(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, neighbour := key("app", "u", "list"), key("app", "u", "list2")
	create(t, s, k, nil)
	create(t, s, neighbour, nil)
	for _, m := range []int{5, 1, 3, 0, 6, 2, 4} {
		putRun(t, s, runRec(k, fmt.Sprint("e-", m), m, runSucceeded))
	}
	putRun(t, s, runRec(neighbour, "n-1", 10, runSucceeded))
	putRun(t, s, runRec(neighbour, "n-2", -10, runSucceeded))
	for _, size := range []int{1, 3, 7, 100} {
		var all []string
		page := store.Page{Size: size}
		for n := 0; ; n++ {
			if n > 8 {
				t.Fatalf("ListRuns(size %d) does not terminate", size)
			}
			list, next, err := s.ListRuns(ctx, k, page)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) > size {
				t.Fatalf("page of %d runs, size %d", len(list), size)
			}
			all = append(all, runIDs(list))
			if next == "" {
				break
			}
			page.Token = next
		}
		if got := strings.Join(strings.Fields(strings.Join(all, " ")), " "); got != "e-6 e-5 e-4 e-3 e-2 e-1 e-0" {
			t.Fatalf("ListRuns(size %d) = %s", size, got)
		}
	}
	empty := key("app", "u", "empty")
	create(t, s, empty, nil)
	if list, next, err := s.ListRuns(ctx, empty, store.Page{}); err != nil || len(list) != 0 || next != "" {
		t.Fatalf("ListRuns(no runs) = %s, %q, %v", runIDs(list), next, err)
	}
	_, _, err := s.ListRuns(ctx, k, store.Page{Token: "!!not base64"})
	wantErr(t, err, store.ErrInvalidArgument, "ListRuns(garbage token)")
	_, next, err := s.ListRuns(ctx, neighbour, store.Page{Size: 1})
	if err != nil || next == "" {
		t.Fatalf("neighbour's first page: %q, %v", next, err)
	}
	_, _, err = s.ListRuns(ctx, k, store.Page{Token: next})
	wantErr(t, err, store.ErrInvalidArgument, "ListRuns(token of another session)")
}

// testRunRequestIDUnique: a run may rewrite its request_id; another run of
// the session may not claim it (and the error names the holder) until the
// holder gives it up. Other sessions are independent.
func testRunRequestIDUnique(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, other := key("app", "u", "req"), key("app", "u", "req-other")
	create(t, s, k, nil)
	create(t, s, other, nil)
	a := runRec(k, "e-a", 0, runRunning)
	a.RequestId = "r1"
	putRun(t, s, a)
	putRun(t, s, withStatus(a, runSucceeded))
	b := runRec(k, "e-b", 1, runPending)
	b.RequestId = "r1"
	err := s.PutRun(ctx, b)
	wantErr(t, err, store.ErrAlreadyExists, "PutRun of a second run with request_id r1")
	if !strings.Contains(err.Error(), "e-a") {
		t.Fatalf("error %q does not name the run holding the request_id", err)
	}
	_, err = s.GetRun(ctx, "e-b")
	wantErr(t, err, store.ErrNotFound, "GetRun of the refused run")
	_, _, err = s.AppendRunEvent(ctx, k, textEvent("agent", "x", nil), b)
	wantErr(t, err, store.ErrAlreadyExists, "AppendRunEvent of a second run with request_id r1")
	if sess, evs := get(t, s, k, store.GetOptions{}); len(evs) != 0 || sess.GetLastSequence() != 0 {
		t.Fatalf("a refused AppendRunEvent stored %d events", len(evs))
	}
	// Another session has request ids of its own.
	ob := runRec(other, "e-ob", 1, runPending)
	ob.RequestId = "r1"
	putRun(t, s, ob)
	// Once e-a gives r1 up, e-b can take it.
	a2 := withStatus(a, runSucceeded)
	a2.RequestId = "r2"
	putRun(t, s, a2)
	putRun(t, s, b)
	for req, want := range map[string]string{"r1": "e-b", "r2": "e-a"} {
		got, err := s.FindRunByRequest(ctx, k, req)
		if err != nil || got.GetRunId() != want {
			t.Fatalf("FindRunByRequest(%s) = %v, %v; want %s", req, got, err, want)
		}
	}
	// A run id is one run: another session cannot reuse it.
	if err := s.PutRun(ctx, runRec(other, "e-a", 2, runPending)); err == nil {
		t.Fatal("PutRun reused the run id of another session's run")
	}
	if got := getRun(t, s, "e-a"); got.GetSessionId() != k.Session || got.GetRequestId() != "r2" {
		t.Fatalf("e-a is now %v", got)
	}
}

func testRunFindByRequest(t *testing.T, s store.Store) {
	ctx := t.Context()
	k1, k2 := key("app", "u", "find1"), key("app", "u", "find2")
	create(t, s, k1, nil)
	create(t, s, k2, nil)
	for _, r := range []struct {
		k       store.SessionKey
		id, req string
	}{{k1, "e-1", "r1"}, {k1, "e-2", "r2"}, {k1, "e-3", ""}, {k2, "e-4", "r1"}} {
		run := runRec(r.k, r.id, 0, runSucceeded)
		run.RequestId = r.req
		putRun(t, s, run)
	}
	tests := []struct {
		k       store.SessionKey
		req     string
		want    string
		wantErr error
	}{
		{k1, "r1", "e-1", nil},
		{k1, "r2", "e-2", nil},
		{k2, "r1", "e-4", nil},
		{k2, "r2", "", store.ErrNotFound},
		{k1, "r1-suffix", "", store.ErrNotFound},
		{key("app", "u", "missing"), "r1", "", store.ErrNotFound},
		{k1, "", "", store.ErrInvalidArgument},
		{key("app", "", "find1"), "r1", "", store.ErrInvalidArgument},
	}
	for _, tc := range tests {
		got, err := s.FindRunByRequest(ctx, tc.k, tc.req)
		if tc.wantErr != nil {
			wantErr(t, err, tc.wantErr, fmt.Sprintf("FindRunByRequest(%s, %q)", tc.k, tc.req))
			continue
		}
		if err != nil || got.GetRunId() != tc.want || got.GetRequestId() != tc.req {
			t.Errorf("FindRunByRequest(%s, %q) = %v, %v; want %s", tc.k, tc.req, got, err, tc.want)
		}
	}
}

// testRunUnfinished: ListUnfinishedRuns lists exactly the pending and
// running runs of every session, oldest first, as last written.
func testRunUnfinished(t *testing.T, s store.Store) {
	k1, k2 := key("app", "u", "unf1"), key("app2", "v", "unf2")
	create(t, s, k1, nil)
	create(t, s, k2, nil)
	a, b, c := runRec(k1, "e-a", 2, runPending), runRec(k2, "e-b", 1, runRunning), runRec(k1, "e-c", 3, runInput)
	put := func(r *agentrunnerv1.Run) func() { return func() { putRun(t, s, r) } }
	appendWith := func(k store.SessionKey, r *agentrunnerv1.Run) func() {
		return func() { appendRun(t, s, k, textEvent("agent", "x", nil), r) }
	}
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"a pending", put(a), "e-a"},
		{"b running", put(b), "e-b e-a"},
		{"c waits for input", put(c), "e-b e-a"},
		{"a starts with an event", appendWith(k1, withStatus(a, runRunning)), "e-b e-a"},
		{"a succeeds", put(withStatus(a, runSucceeded)), "e-b"},
		{"c resumes", put(withStatus(c, runRunning)), "e-b e-c"},
		{"b fails with an event", appendWith(k2, withStatus(b, runFailed)), "e-c"},
		{"c is cancelled", put(withStatus(c, runCancelled)), ""},
		{"a runs again", put(withStatus(a, runRunning)), "e-a"},
	}
	last := withStatus(a, runRunning)
	for _, st := range steps {
		st.do()
		if got := unfinishedIDs(t, s); got != st.want {
			t.Fatalf("after %q: unfinished runs %q, want %q", st.name, got, st.want)
		}
	}
	runs, err := s.ListUnfinishedRuns(t.Context())
	if err != nil || len(runs) != 1 {
		t.Fatalf("unfinished runs %v, %v", runs, err)
	}
	wantRun(t, runs[0], last, "unfinished run as listed")
}

// testRunPutLater: a queued record is seen at once by every read (one of
// a run known only from the queue included), and a later queued record of
// the run replaces it.
func testRunPutLater(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "later")
	create(t, s, k, nil)
	a := runRec(k, "e-a", 0, runRunning)
	a.RequestId = "ra"
	putRun(t, s, a)
	fin := withStatus(a, runSucceeded)
	fin.EndTime = timestamppb.New(runEpoch.Add(time.Minute))
	s.PutRunLater(fin) // the store may keep fin: it is not changed again
	wantRun(t, getRun(t, s, "e-a"), fin, "GetRun of a queued record")
	if got, err := s.FindRunByRequest(ctx, k, "ra"); err != nil || got.GetStatus() != runSucceeded {
		t.Fatalf("FindRunByRequest of a queued record = %v, %v", got, err)
	}
	if got := unfinishedIDs(t, s); got != "" {
		t.Fatalf("unfinished runs %q after the queued final record", got)
	}
	n := runRec(k, "e-n", 5, runPending)
	n.RequestId = "rn"
	s.PutRunLater(n)
	s.PutRunLater(withStatus(n, runRunning))
	s.PutRunLater(runRec(k, "e-m", 7, runSucceeded))
	for _, size := range []int{1, 2, 10} {
		if got := listAll(t, s, k, size); got != "e-m:SUCCEEDED e-n:RUNNING e-a:SUCCEEDED" {
			t.Fatalf("ListRuns(size %d) with queued records = %s", size, got)
		}
	}
	if got := unfinishedIDs(t, s); got != "e-n" {
		t.Fatalf("unfinished runs %q, want the queued e-n", got)
	}
	if got, err := s.FindRunByRequest(ctx, k, "rn"); err != nil || got.GetRunId() != "e-n" {
		t.Fatalf("FindRunByRequest of a queued run = %v, %v", got, err)
	}
	// A queued record that gives its request_id up no longer holds it.
	noReq := withStatus(a, runCancelled)
	noReq.RequestId = ""
	s.PutRunLater(noReq)
	_, err := s.FindRunByRequest(ctx, k, "ra")
	wantErr(t, err, store.ErrNotFound, "FindRunByRequest of a request_id the queued record gave up")
}

// listAll pages through a session's runs and renders them as "id:STATUS".
func listAll(t *testing.T, s store.Store, k store.SessionKey, size int) string {
	t.Helper()
	var out []string
	page := store.Page{Size: size}
	for n := 0; ; n++ {
		if n > 20 {
			t.Fatal("ListRuns does not terminate")
		}
		list, next, err := s.ListRuns(t.Context(), k, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list {
			out = append(out, r.GetRunId()+":"+strings.TrimPrefix(r.GetStatus().String(), "RUN_STATUS_"))
		}
		if next == "" {
			return strings.Join(out, " ")
		}
		page.Token = next
	}
}

// testRunPutLaterOrder: a synchronous write after a queued record wins,
// now and after later commits; a queued record of a deleted session is
// dropped.
func testRunPutLaterOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "later")
	create(t, s, k, nil)
	s.PutRunLater(runRec(k, "e-n", 5, runRunning))
	putRun(t, s, runRec(k, "e-n", 5, runCancelled))
	for range 2 {
		if got := getRun(t, s, "e-n"); got.GetStatus() != runCancelled {
			t.Fatalf("e-n is %v after a synchronous write", got.GetStatus())
		}
		putRun(t, s, runRec(k, "e-other", 1, runSucceeded)) // another commit
	}
	gone := key("app", "u", "gone")
	create(t, s, gone, nil)
	s.PutRunLater(runRec(gone, "e-g1", 0, runRunning))
	if err := s.DeleteSession(ctx, gone); err != nil {
		t.Fatal(err)
	}
	s.PutRunLater(runRec(gone, "e-g2", 0, runRunning))
	for range 2 {
		for _, id := range []string{"e-g1", "e-g2"} {
			_, err := s.GetRun(ctx, id)
			wantErr(t, err, store.ErrNotFound, "GetRun of a queued record of a deleted session")
		}
		if got := unfinishedIDs(t, s); got != "" {
			t.Fatalf("unfinished runs %q after the session was deleted", got)
		}
		putRun(t, s, runRec(k, "e-other", 1, runSucceeded)) // another commit
	}
}

// testRunDeleteCascades: DeleteSession deletes the session's runs, their
// request ids and their place among the unfinished runs.
func testRunDeleteCascades(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, keep := key("app", "u", "doomed"), key("app", "u", "kept")
	create(t, s, k, nil)
	create(t, s, keep, nil)
	r1 := runRec(k, "e-1", 0, runPending)
	r1.RequestId = "r1"
	putRun(t, s, r1)
	appendRun(t, s, k, textEvent("agent", "x", nil), runRec(k, "e-2", 1, runRunning))
	putRun(t, s, runRec(k, "e-3", 2, runSucceeded))
	s.PutRunLater(runRec(k, "e-5", 4, runRunning))
	kept := runRec(keep, "e-4", 3, runRunning)
	kept.RequestId = "r1"
	putRun(t, s, kept)
	if err := s.DeleteSession(ctx, k); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e-1", "e-2", "e-3", "e-5"} {
		_, err := s.GetRun(ctx, id)
		wantErr(t, err, store.ErrNotFound, "GetRun("+id+") after DeleteSession")
	}
	_, _, err := s.ListRuns(ctx, k, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListRuns after DeleteSession")
	_, err = s.FindRunByRequest(ctx, k, "r1")
	wantErr(t, err, store.ErrNotFound, "FindRunByRequest after DeleteSession")
	if got := unfinishedIDs(t, s); got != "e-4" {
		t.Fatalf("unfinished runs %q after DeleteSession, want the other session's e-4", got)
	}
	if got, err := s.FindRunByRequest(ctx, keep, "r1"); err != nil || got.GetRunId() != "e-4" {
		t.Fatalf("other session's run = %v, %v", got, err)
	}
	// A recreated session starts without runs; ids and request ids are free.
	create(t, s, k, nil)
	if list, _, err := s.ListRuns(ctx, k, store.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("recreated session lists %s, %v", runIDs(list), err)
	}
	again := runRec(k, "e-1", 9, runPending)
	again.RequestId = "r1"
	putRun(t, s, again)
	wantRun(t, getRun(t, s, "e-1"), again, "a new run with a deleted run's id")
}

func testRunNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, missing := key("app", "u", "exists"), key("app", "u", "missing")
	create(t, s, k, nil)
	run := runRec(missing, "e-m", 0, runRunning)
	calls := []struct {
		name string
		call func() error
	}{
		{"GetRun of an unknown id", func() error { _, err := s.GetRun(ctx, "e-none"); return err }},
		{"PutRun in a missing session", func() error { return s.PutRun(ctx, run) }},
		{"AppendRunEvent in a missing session", func() error {
			_, _, err := s.AppendRunEvent(ctx, missing, textEvent("a", "x", nil), run)
			return err
		}},
		{"ListRuns of a missing session", func() error { _, _, err := s.ListRuns(ctx, missing, store.Page{}); return err }},
		{"FindRunByRequest in a missing session", func() error { _, err := s.FindRunByRequest(ctx, missing, "r"); return err }},
		{"FindRunByRequest of an unknown request", func() error { _, err := s.FindRunByRequest(ctx, k, "r"); return err }},
		{"GetRun of a run queued in a missing session", func() error {
			s.PutRunLater(run)
			_, err := s.GetRun(ctx, "e-m")
			return err
		}},
	}
	for _, c := range calls {
		wantErr(t, c.call(), store.ErrNotFound, c.name)
	}
}

func testRunInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, other := key("app", "u", "inv"), key("app", "u", "inv2")
	create(t, s, k, nil)
	create(t, s, other, nil)
	edit := func(f func(r *agentrunnerv1.Run)) *agentrunnerv1.Run {
		r := runRec(k, "e-1", 0, runRunning)
		f(r)
		return r
	}
	badRuns := map[string]*agentrunnerv1.Run{
		"nil run":             nil,
		"empty run_id":        edit(func(r *agentrunnerv1.Run) { r.RunId = "" }),
		"empty app_name":      edit(func(r *agentrunnerv1.Run) { r.AppName = "" }),
		"empty user_id":       edit(func(r *agentrunnerv1.Run) { r.UserId = "" }),
		"empty session_id":    edit(func(r *agentrunnerv1.Run) { r.SessionId = "" }),
		"missing create_time": edit(func(r *agentrunnerv1.Run) { r.CreateTime = nil }),
		"invalid create_time": edit(func(r *agentrunnerv1.Run) { r.CreateTime.Nanos = -1 }),
	}
	for name, run := range badRuns {
		wantErr(t, s.PutRun(ctx, run), store.ErrInvalidArgument, "PutRun with "+name)
		_, _, err := s.AppendRunEvent(ctx, k, textEvent("a", "x", nil), run)
		wantErr(t, err, store.ErrInvalidArgument, "AppendRunEvent with "+name)
	}
	good := runRec(k, "e-1", 0, runRunning)
	partial := textEvent("a", "x", nil)
	partial.Partial = true
	appends := map[string]func() error{
		"a run of another session": func() error {
			_, _, err := s.AppendRunEvent(ctx, k, textEvent("a", "x", nil), runRec(other, "e-1", 0, runRunning))
			return err
		},
		"a nil event":     func() error { _, _, err := s.AppendRunEvent(ctx, k, nil, good); return err },
		"a partial event": func() error { _, _, err := s.AppendRunEvent(ctx, k, partial, good); return err },
	}
	for name, call := range appends {
		wantErr(t, call(), store.ErrInvalidArgument, "AppendRunEvent with "+name)
	}
	if _, evs := get(t, s, k, store.GetOptions{}); len(evs) != 0 {
		t.Fatalf("refused AppendRunEvent calls stored %d events", len(evs))
	}
	if _, err := s.GetRun(ctx, "e-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run was stored: %v", err)
	}
	_, err := s.GetRun(ctx, "")
	wantErr(t, err, store.ErrInvalidArgument, "GetRun(\"\")")
	_, _, err = s.ListRuns(ctx, key("", "u", "inv"), store.Page{})
	wantErr(t, err, store.ErrInvalidArgument, "ListRuns with an empty app")
}

// testRunConcurrent: sessions run one run after another, all at once;
// every record ends as last written, with its own range of events.
func testRunConcurrent(t *testing.T, s store.Store) {
	const sessions, runs, events = 6, 3, 4
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		k := key("app", "u", fmt.Sprint("conc", i))
		create(t, s, k, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range runs {
				if err := runOnce(t, s, k, fmt.Sprintf("e-%d-%d", i, r), r, events); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range sessions {
		list, _, err := s.ListRuns(t.Context(), key("app", "u", fmt.Sprint("conc", i)), store.Page{})
		if err != nil || runIDs(list) != fmt.Sprintf("e-%d-2 e-%d-1 e-%d-0", i, i, i) {
			t.Fatalf("session %d runs %s, %v", i, runIDs(list), err)
		}
		for r, run := range list {
			n := uint64(runs - 1 - r)
			if run.GetStatus() != runSucceeded || run.GetFirstSequence() != n*events+1 || run.GetLastSequence() != (n+1)*events {
				t.Fatalf("run %s ended as %v", run.GetRunId(), run)
			}
		}
	}
	if got := unfinishedIDs(t, s); got != "" {
		t.Fatalf("unfinished runs %q after every run ended", got)
	}
}

// runOnce stores a run as the runner does: pending, its events with the
// running record, and its final record queued.
func runOnce(t *testing.T, s store.Store, k store.SessionKey, id string, minute, events int) error {
	run := runRec(k, id, minute, runPending)
	if err := s.PutRun(t.Context(), run); err != nil {
		return err
	}
	run.Status = runRunning
	for j := range events {
		ev := textEvent("agent", fmt.Sprint(j), nil)
		ev.InvocationId = id
		var err error
		if _, run, err = s.AppendRunEvent(t.Context(), k, ev, run); err != nil {
			return err
		}
	}
	s.PutRunLater(withStatus(run, runSucceeded))
	return nil
}

// sizedEvent is an event of about n bytes encoded.
func sizedEvent(i, n int) *agentrunnerv1.Event {
	return textEvent("agent", fmt.Sprintf("%04d ", i)+strings.Repeat("x", n), nil)
}

// testPagesBoundedByBytes: ListEvents and ListSessions pages end before
// the item that would pass MaxBytes, hold at least one item however
// large, and together list everything once, in order.
func testPagesBoundedByBytes(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "big")
	create(t, s, k, nil)
	sizes := []int{3000, 500, 9000, 200, 200, 200, 4000, 12000, 100}
	for i, n := range sizes {
		appendEv(t, s, k, sizedEvent(i, n))
	}
	const budget = 8000
	var got []uint64
	page := store.Page{Size: 100, MaxBytes: budget}
	for n := 0; ; n++ {
		if n > len(sizes) {
			t.Fatal("ListEvents with MaxBytes does not terminate")
		}
		evs, next, err := s.ListEvents(ctx, k, store.EventFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			t.Fatalf("empty page before the end (token %q)", page.Token)
		}
		size := 0
		for _, ev := range evs {
			size += store.ItemBytes(proto.Size(ev))
			got = append(got, ev.GetSequence())
		}
		if len(evs) > 1 && size > budget {
			t.Fatalf("page of %d events and %d bytes, over the bound %d", len(evs), size, budget)
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("pages listed sequences %v", got)
	}
	// A page that may hold more does: the first page takes 3000 and 500.
	evs, _, err := s.ListEvents(ctx, k, store.EventFilter{}, store.Page{MaxBytes: budget})
	if err != nil || len(evs) != 2 {
		t.Fatalf("first page = %d events, %v; want 2", len(evs), err)
	}

	for i := range 5 {
		create(t, s, key("sized", "u", fmt.Sprint("s", i)), map[string]any{"blob": strings.Repeat("y", 3000)})
	}
	var ids []string
	page = store.Page{MaxBytes: 7000}
	for n := 0; ; n++ {
		if n > 5 {
			t.Fatal("ListSessions with MaxBytes does not terminate")
		}
		list, next, err := s.ListSessions(ctx, "sized", "", page)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 && next != "" {
			t.Fatalf("page of %d sessions of ~3 KB under a 7000-byte bound, want 2", len(list))
		}
		for _, sess := range list {
			ids = append(ids, sess.GetSessionId())
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if strings.Join(ids, " ") != "s0 s1 s2 s3 s4" {
		t.Fatalf("sessions listed: %v", ids)
	}
}

// testGetSessionBoundedByBytes: GetSession with MaxBytes returns the
// newest events that fit, within a count and after a sequence too.
func testGetSessionBoundedByBytes(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "getbig")
	create(t, s, k, nil)
	for i := range 10 {
		appendEv(t, s, k, sizedEvent(i, 1000))
	}
	seqs := func(opts store.GetOptions) string {
		t.Helper()
		_, evs, err := s.GetSession(ctx, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(evs))
		for i, ev := range evs {
			out[i] = fmt.Sprint(ev.GetSequence())
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		opts store.GetOptions
		want string
	}{
		{store.GetOptions{MaxBytes: 3500}, "8 9 10"},
		{store.GetOptions{MaxBytes: 3500, NumRecentEvents: 2}, "9 10"},
		{store.GetOptions{MaxBytes: 3500, AfterSequence: 9}, "10"},
		{store.GetOptions{MaxBytes: 100}, ""},
		{store.GetOptions{MaxBytes: 1 << 20}, "1 2 3 4 5 6 7 8 9 10"},
		{store.GetOptions{NumRecentEvents: 3}, "8 9 10"},
	} {
		if got := seqs(tc.opts); got != tc.want {
			t.Errorf("GetSession(%+v) = events %q, want %q", tc.opts, got, tc.want)
		}
	}
}

// testAppendEventOnce: an id the session holds is a retry (same content:
// the stored event, nothing appended) or a conflict (ErrAlreadyExists),
// whoever appended the first (AppendEvent included); an empty id always
// appends, and the same id in another session is another event.
func testAppendEventOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, other := key("app", "u", "once"), key("app", "u", "once2")
	create(t, s, k, nil)
	create(t, s, other, nil)
	first := textEvent("agent", "hello", map[string]any{"n": 1})
	first.Id = "ev-1"
	stored, existed, err := s.AppendEventOnce(ctx, k, first)
	if err != nil || existed || stored.GetSequence() != 1 {
		t.Fatalf("first append = seq %d, existed %v, %v", stored.GetSequence(), existed, err)
	}
	appendEv(t, s, k, textEvent("agent", "between", nil))
	again, existed, err := s.AppendEventOnce(ctx, k, proto.CloneOf(first))
	if err != nil || !existed || again.GetSequence() != 1 || !proto.Equal(again, stored) {
		t.Fatalf("retry = %v, existed %v, %v; want the stored event", again, existed, err)
	}
	changed := proto.CloneOf(first)
	changed.Content.Parts[0].Data = &agentrunnerv1.Part_Text{Text: "hello!"}
	_, _, err = s.AppendEventOnce(ctx, k, changed)
	wantErr(t, err, store.ErrAlreadyExists, "AppendEventOnce(same id, other content)")
	// An id AppendEvent stored is found too.
	plain := textEvent("agent", "plain", nil)
	plain.Id = "ev-plain"
	appendEv(t, s, k, plain)
	copied := proto.CloneOf(plain)
	copied.Author = "someone else"
	_, _, err = s.AppendEventOnce(ctx, k, copied)
	wantErr(t, err, store.ErrAlreadyExists, "AppendEventOnce(an AppendEvent id, other content)")
	if _, existed, err := s.AppendEventOnce(ctx, other, proto.CloneOf(first)); err != nil || existed {
		t.Fatalf("the same id in another session: existed %v, %v", existed, err)
	}
	for range 2 {
		if _, existed, err := s.AppendEventOnce(ctx, k, textEvent("agent", "no id", nil)); err != nil || existed {
			t.Fatalf("an event without id: existed %v, %v", existed, err)
		}
	}
	_, evs, err := s.GetSession(ctx, k, store.GetOptions{})
	if err != nil || len(evs) != 5 {
		t.Fatalf("session holds %d events, %v; want 5", len(evs), err)
	}
	if sess, _, _ := s.GetSession(ctx, k, store.GetOptions{}); sess.GetState().GetFields()["n"].GetNumberValue() != 1 {
		t.Fatal("a retry applied its state delta again, or the first did not")
	}
	_, _, err = s.AppendEventOnce(ctx, key("app", "u", "missing"), proto.CloneOf(first))
	wantErr(t, err, store.ErrNotFound, "AppendEventOnce(missing session)")
}

// testCompaction: a compaction event moves the session's
// compacted_sequence to the end of its range (never back), keeps every
// event readable, and one whose range is not within the earlier events is
// refused without writing anything.
func testCompaction(t *testing.T, s store.Store) {
	k := key("app", "u", "compact")
	create(t, s, k, nil)
	for i := range 6 {
		appendEv(t, s, k, textEvent("agent", fmt.Sprint("m", i+1), nil))
	}
	compaction := func(start, end uint64) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: "user", Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{
			StartSequence: start, EndSequence: end,
			Summary: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "summary"}}}},
		}}}
	}
	for _, bad := range [][2]uint64{{0, 3}, {4, 3}, {1, 7}, {1, 99}} {
		_, err := s.AppendEvent(t.Context(), k, compaction(bad[0], bad[1]))
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("compaction %d..%d: err = %v, want ErrInvalidArgument", bad[0], bad[1], err)
		}
	}
	if sess, _ := get(t, s, k, store.GetOptions{}); sess.GetLastSequence() != 6 || sess.GetCompactedSequence() != 0 {
		t.Fatalf("refused compactions changed the session: last %d, compacted %d", sess.GetLastSequence(), sess.GetCompactedSequence())
	}
	appendEv(t, s, k, compaction(1, 4))
	appendEv(t, s, k, textEvent("agent", "m8", nil))
	sess, evs := get(t, s, k, store.GetOptions{})
	if sess.GetCompactedSequence() != 4 || len(evs) != 8 {
		t.Fatalf("after compaction 1..4: compacted %d, %d events", sess.GetCompactedSequence(), len(evs))
	}
	if c := evs[6].GetActions().GetCompaction(); c.GetEndSequence() != 4 || c.GetSummary().GetParts()[0].GetText() != "summary" {
		t.Fatalf("stored compaction = %v", c)
	}
	// An older range appended later does not move it back.
	appendEv(t, s, k, compaction(1, 2))
	if sess, _ := get(t, s, k, store.GetOptions{}); sess.GetCompactedSequence() != 4 {
		t.Fatalf("compacted_sequence went back to %d", sess.GetCompactedSequence())
	}
}
