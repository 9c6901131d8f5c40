// Package storetest is the conformance suite every store.Store
// implementation runs: the session, event, state-scope and artifact
// semantics that the runner and the gRPC API rely on.
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

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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
		{"ConcurrentAppends", testConcurrentAppends},
		{"ToolCallLedger", testToolCallLedger},
		{"MalformedPageTokens", testMalformedPageTokens},
		{"Closed", testClosed},
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
	_, _, err = s.ListEvents(ctx, k, 0, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListEvents")
	wantErr(t, s.DeleteSession(ctx, k), store.ErrNotFound, "DeleteSession")
	_, err = s.SaveArtifact(ctx, k, "f.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}})
	wantErr(t, err, store.ErrNotFound, "SaveArtifact on a missing session")
	ek := key("app", "u", "exists")
	_, _, err = s.LoadArtifact(ctx, ek, "nope.txt", 0)
	wantErr(t, err, store.ErrNotFound, "LoadArtifact of a missing artifact")
	_, _, err = s.ListArtifactVersions(ctx, ek, "nope.txt", store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListArtifactVersions of a missing artifact")
	wantErr(t, s.DeleteArtifact(ctx, ek, "nope.txt"), store.ErrNotFound, "DeleteArtifact of a missing artifact")
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
		evs, next, err := s.ListEvents(t.Context(), k, 0, page)
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
	evs, next, err := s.ListEvents(t.Context(), k, 5, store.Page{})
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
	if err := s.DeleteArtifact(ctx, k, "f"); err != nil {
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
	_, _, err = s.ListEvents(ctx, k, 0, store.Page{Token: "%%%"})
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

func funcPart(call bool, id, name string) *agentrunnerv1.Part {
	if call {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name}}}
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name}}}
}

// testToolCallLedger: calls open with their event, answers close them (a
// waiting call only by the user's), second answers change nothing, and the
// ledger goes with its session.
func testToolCallLedger(t *testing.T, s store.Store) {
	k := key("app", "u", "s")
	create(t, s, k, nil)
	events := []*agentrunnerv1.Event{
		{Author: "bot", LongRunningToolIds: []string{"b"}, Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(true, "a", "lookup"), funcPart(true, "b", "approve")}}},
		{Author: "bot", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(false, "a", "lookup"), funcPart(false, "b", "approve")}}},
		{Author: "user", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{funcPart(false, "b", "approve"), funcPart(false, "a", "lookup")}}},
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
	want := []string{"a lookup #1->#2 waits=false", "b approve #1->#3 waits=true"}
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
