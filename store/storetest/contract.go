package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Cases of the contract's later additions: deleting one artifact
// version, "user:" artifacts without a session, and events selected by
// time.

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// versionsOf lists an artifact's versions, newest first.
func versionsOf(t *testing.T, s store.Store, k store.SessionKey, name string) []int64 {
	t.Helper()
	list, _, err := s.ListArtifactVersions(t.Context(), k, name, store.Page{})
	if err != nil {
		t.Fatalf("ListArtifactVersions(%s, %q): %v", k, name, err)
	}
	out := make([]int64, len(list))
	for i, v := range list {
		out[i] = v.GetVersion()
	}
	return out
}

func testDeleteArtifactVersion(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "delver")
	create(t, s, k, nil)
	for i := 1; i <= 4; i++ {
		if _, err := s.SaveArtifact(ctx, k, "f", textPart(fmt.Sprint("v", i))); err != nil {
			t.Fatal(err)
		}
	}
	// A middle version: the others stay, the latest is unchanged.
	if err := s.DeleteArtifact(ctx, k, "f", 2); err != nil {
		t.Fatalf("DeleteArtifact(version 2): %v", err)
	}
	if got := fmt.Sprint(versionsOf(t, s, k, "f")); got != "[4 3 1]" {
		t.Fatalf("versions after deleting 2 = %s, want [4 3 1]", got)
	}
	_, _, err := s.LoadArtifact(ctx, k, "f", 2)
	wantErr(t, err, store.ErrNotFound, "LoadArtifact of the deleted version")
	wantErr(t, s.DeleteArtifact(ctx, k, "f", 2), store.ErrNotFound, "deleting a deleted version")
	wantErr(t, s.DeleteArtifact(ctx, k, "f", 9), store.ErrNotFound, "deleting a version never saved")
	wantErr(t, s.DeleteArtifact(ctx, k, "nope", 1), store.ErrNotFound, "deleting a version of a missing artifact")
	wantErr(t, s.DeleteArtifact(ctx, k, "f", -1), store.ErrInvalidArgument, "negative version")

	// The latest: the one before it becomes the latest, for loads and
	// for the listing.
	if err := s.DeleteArtifact(ctx, k, "f", 4); err != nil {
		t.Fatalf("DeleteArtifact(version 4): %v", err)
	}
	p, v, err := s.LoadArtifact(ctx, k, "f", 0)
	if err != nil || v.GetVersion() != 3 || p.GetText() != "v3" {
		t.Fatalf("latest after deleting 4 = %v %v, %v; want version 3, v3", v, p, err)
	}
	list, _, err := s.ListArtifacts(ctx, k, store.Page{})
	if err != nil || len(list) != 1 || list[0].GetVersion() != 3 {
		t.Fatalf("ListArtifacts after deleting 4 = %v, %v; want f version 3", list, err)
	}
	// The last two, one by one: then the artifact is gone.
	for _, ver := range []int64{3, 1} {
		if err := s.DeleteArtifact(ctx, k, "f", ver); err != nil {
			t.Fatalf("DeleteArtifact(version %d): %v", ver, err)
		}
	}
	_, _, err = s.LoadArtifact(ctx, k, "f", 0)
	wantErr(t, err, store.ErrNotFound, "LoadArtifact after deleting every version")
	if list, _, err := s.ListArtifacts(ctx, k, store.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("ListArtifacts after deleting every version = %v, %v", list, err)
	}
	wantErr(t, s.DeleteArtifact(ctx, key("app", "u", "missing"), "f", 1), store.ErrNotFound, "missing session")
}

func testUserArtifactsNoSession(t *testing.T, s store.Store) {
	ctx := t.Context()
	user := key("app", "alice", "") // the user's scope, no session
	v, err := s.SaveArtifact(ctx, user, "user:prefs", textPart("one"))
	if err != nil || v.GetVersion() != 1 {
		t.Fatalf("SaveArtifact(user:, no session, no session exists) = %v, %v", v, err)
	}
	// Visible from any session of the user, created before or after.
	s1 := key("app", "alice", "s1")
	create(t, s, s1, nil)
	if _, err := s.SaveArtifact(ctx, s1, "user:prefs", textPart("two")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SaveArtifact(ctx, s1, "own", textPart("mine")); err != nil {
		t.Fatal(err)
	}
	if p, v, err := s.LoadArtifact(ctx, user, "user:prefs", 0); err != nil || v.GetVersion() != 2 || p.GetText() != "two" {
		t.Fatalf("LoadArtifact(no session) = %v %v, %v; want version 2", v, p, err)
	}
	if got := fmt.Sprint(versionsOf(t, s, user, "user:prefs")); got != "[2 1]" {
		t.Fatalf("ListArtifactVersions(no session) = %s", got)
	}
	// With no session the listing holds the user's names alone.
	list, _, err := s.ListArtifacts(ctx, user, store.Page{})
	if err != nil || len(list) != 1 || list[0].GetFilename() != "user:prefs" || list[0].GetVersion() != 2 {
		t.Fatalf("ListArtifacts(no session) = %v, %v", list, err)
	}
	if list, _, err := s.ListArtifacts(ctx, s1, store.Page{}); err != nil || len(list) != 2 {
		t.Fatalf("ListArtifacts(s1) = %v, %v; want own and user:prefs", list, err)
	}
	// Another user sees nothing; a session that is named must exist.
	_, _, err = s.LoadArtifact(ctx, key("app", "bob", ""), "user:prefs", 0)
	wantErr(t, err, store.ErrNotFound, "another user's artifact")
	_, _, err = s.LoadArtifact(ctx, key("app", "alice", "gone"), "user:prefs", 0)
	wantErr(t, err, store.ErrNotFound, "a named session that does not exist")
	// Names of a session's own need the session.
	_, err = s.SaveArtifact(ctx, user, "own", textPart("x"))
	wantErr(t, err, store.ErrInvalidArgument, "session-scoped name without a session")
	_, _, err = s.LoadArtifact(ctx, key("app", "", ""), "user:prefs", 0)
	wantErr(t, err, store.ErrInvalidArgument, "no user")
	// Deleting without a session, one version and then all.
	if err := s.DeleteArtifact(ctx, user, "user:prefs", 2); err != nil {
		t.Fatalf("DeleteArtifact(no session, version 2): %v", err)
	}
	if _, v, err := s.LoadArtifact(ctx, s1, "user:prefs", 0); err != nil || v.GetVersion() != 1 {
		t.Fatalf("latest seen from s1 after deleting 2 = %v, %v", v, err)
	}
	if err := s.DeleteArtifact(ctx, user, "user:prefs", 0); err != nil {
		t.Fatalf("DeleteArtifact(no session, every version): %v", err)
	}
	if list, _, err := s.ListArtifacts(ctx, s1, store.Page{}); err != nil || len(list) != 1 || list[0].GetFilename() != "own" {
		t.Fatalf("ListArtifacts(s1) after delete = %v, %v", list, err)
	}
}

// timedEvents appends events with the given offsets from base as their
// timestamps and returns base.
func timedEvents(t *testing.T, s store.Store, k store.SessionKey, offsets ...time.Duration) time.Time {
	t.Helper()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, d := range offsets {
		ev := textEvent("model", fmt.Sprint("e", i+1), nil)
		ev.Timestamp = timestamppb.New(base.Add(d))
		appendEv(t, s, k, ev)
	}
	return base
}

func seqString(evs []*agentrunnerv1.Event) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = fmt.Sprint(ev.GetSequence())
	}
	return strings.Join(parts, " ")
}

func testGetSessionAfterTime(t *testing.T, s store.Store) {
	k := key("app", "u", "bytime")
	create(t, s, k, nil)
	// Seconds apart, then two events a few nanoseconds apart within one
	// microsecond (a store keeping microseconds must still tell them
	// apart), then one whose caller set an earlier time.
	base := timedEvents(t, s, k, 0, time.Second, 2*time.Second, 3*time.Second, 3*time.Second+3, 3*time.Second+7, time.Second/2)
	at := func(d time.Duration) *time.Time { t := base.Add(d); return &t }
	cases := []struct {
		opts store.GetOptions
		want string
	}{
		{store.GetOptions{AfterTime: at(-time.Hour)}, "1 2 3 4 5 6 7"},
		{store.GetOptions{AfterTime: at(time.Second)}, "3 4 5 6"},
		{store.GetOptions{AfterTime: at(time.Second / 4)}, "2 3 4 5 6 7"},
		{store.GetOptions{AfterTime: at(3*time.Second + 3)}, "6"},
		{store.GetOptions{AfterTime: at(3 * time.Second)}, "5 6"},
		{store.GetOptions{AfterTime: at(time.Hour)}, ""},
		{store.GetOptions{AfterTime: at(time.Second), AfterSequence: 3}, "4 5 6"},
		{store.GetOptions{AfterTime: at(time.Second), NumRecentEvents: 2}, "5 6"},
		{store.GetOptions{AfterTime: at(time.Second), NumRecentEvents: 10}, "3 4 5 6"},
		{store.GetOptions{AfterTime: at(time.Second), AfterSequence: 4, NumRecentEvents: 10}, "5 6"},
		{store.GetOptions{AfterTime: at(0), NumRecentEvents: 3}, "5 6 7"},
		{store.GetOptions{AfterTime: at(time.Second), MaxBytes: 1 << 20}, "3 4 5 6"},
	}
	for _, tc := range cases {
		sess, evs := get(t, s, k, tc.opts)
		if got := seqString(evs); got != tc.want {
			t.Errorf("GetSession(after %v, seq %d, recent %d) = [%s], want [%s]",
				tc.opts.AfterTime.Sub(base), tc.opts.AfterSequence, tc.opts.NumRecentEvents, got, tc.want)
		}
		if sess.GetLastSequence() != 7 {
			t.Errorf("last_sequence = %d, want 7", sess.GetLastSequence())
		}
	}
	// A byte bound keeps the newest of the selected events: two of them.
	_, all := get(t, s, k, store.GetOptions{AfterTime: at(time.Second)})
	// Half an event of slack: a store may count its own encoding.
	budget := store.ItemBytes(proto.Size(all[2])) + store.ItemBytes(proto.Size(all[3])) + proto.Size(all[1])/2
	if _, evs := get(t, s, k, store.GetOptions{AfterTime: at(time.Second), MaxBytes: budget}); seqString(evs) != "5 6" {
		t.Errorf("GetSession(after time, %d bytes) = [%s], want [5 6]", budget, seqString(evs))
	}
}

// testEventsAfterZeroTime: a filter at the zero instant
// (0001-01-01T00:00:00Z) is a filter like any other: it leaves out an
// event stamped exactly then. Only a nil AfterTime means none.
func testEventsAfterZeroTime(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "zerotime")
	create(t, s, k, nil)
	var zero time.Time
	for i, ts := range []time.Time{zero, zero.Add(time.Microsecond), zero, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} {
		ev := textEvent("model", fmt.Sprint("e", i+1), nil)
		ev.Timestamp = timestamppb.New(ts)
		appendEv(t, s, k, ev)
	}
	for _, opts := range []store.GetOptions{
		{AfterTime: &zero},
		{AfterTime: &zero, NumRecentEvents: 3},
		{AfterTime: &zero, MaxBytes: 1 << 20},
	} {
		if _, evs := get(t, s, k, opts); seqString(evs) != "2 4" {
			t.Errorf("GetSession(after the zero instant, recent %d, %d bytes) = [%s], want [2 4]", opts.NumRecentEvents, opts.MaxBytes, seqString(evs))
		}
	}
	if _, evs := get(t, s, k, store.GetOptions{}); seqString(evs) != "1 2 3 4" {
		t.Errorf("GetSession(no time) = [%s], want [1 2 3 4]", seqString(evs))
	}
	evs, _, err := s.ListEvents(ctx, k, store.EventFilter{AfterTime: &zero}, store.Page{Size: 1})
	if err != nil || seqString(evs) != "2" {
		t.Fatalf("ListEvents(after the zero instant, 1 a page) = [%s], %v; want [2]", seqString(evs), err)
	}
	evs, _, err = s.ListEvents(ctx, k, store.EventFilter{AfterTime: &zero}, store.Page{})
	if err != nil || seqString(evs) != "2 4" {
		t.Fatalf("ListEvents(after the zero instant) = [%s], %v; want [2 4]", seqString(evs), err)
	}
}

func testListEventsAfterTime(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := key("app", "u", "listtime")
	create(t, s, k, nil)
	var offsets []time.Duration
	for i := range 12 {
		offsets = append(offsets, time.Duration(i)*time.Second)
	}
	offsets[7] = -time.Minute // a caller's earlier time: left out
	base := timedEvents(t, s, k, offsets...)
	from := base.Add(2 * time.Second)
	f := store.EventFilter{AfterTime: &from}
	var got []*agentrunnerv1.Event
	page := store.Page{Size: 3}
	for pages := 0; ; pages++ {
		evs, next, err := s.ListEvents(ctx, k, f, page)
		if err != nil {
			t.Fatalf("ListEvents(after time): %v", err)
		}
		if pages > 10 {
			t.Fatal("ListEvents does not end")
		}
		got = append(got, evs...)
		if next == "" {
			break
		}
		page.Token = next
	}
	if s := seqString(got); s != "4 5 6 7 9 10 11 12" {
		t.Fatalf("ListEvents(after time) pages = [%s], want [4 5 6 7 9 10 11 12]", s)
	}
	f.AfterSequence = 9
	if evs, next, err := s.ListEvents(ctx, k, f, store.Page{}); err != nil || seqString(evs) != "10 11 12" || next != "" {
		t.Fatalf("ListEvents(after time and sequence 9) = [%s], %q, %v", seqString(evs), next, err)
	}
	later := base.Add(time.Hour)
	evs, _, err := s.ListEvents(ctx, k, store.EventFilter{AfterTime: &later}, store.Page{})
	if err != nil || len(evs) != 0 {
		t.Fatalf("ListEvents(after every event) = [%s], %v", seqString(evs), err)
	}
	_, _, err = s.ListEvents(ctx, key("app", "u", "missing"), f, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListEvents(after time) of a missing session")
}
