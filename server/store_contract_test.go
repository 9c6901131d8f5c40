package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// versionsOf lists an artifact's versions through the API, newest first.
func (e *env) versionsOf(t *testing.T, session, name string) string {
	t.Helper()
	resp, err := e.artifacts.ListArtifactVersions(t.Context(), &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u1", SessionId: session, Filename: name})
	if err != nil {
		t.Fatalf("ListArtifactVersions(%q, %q): %v", session, name, err)
	}
	var vs []string
	for _, v := range resp.GetVersions() {
		vs = append(vs, fmt.Sprint(v.GetVersion()))
	}
	return strings.Join(vs, " ")
}

func (e *env) saveText(t *testing.T, session, name, text string) int64 {
	t.Helper()
	resp, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: session, Filename: name,
		Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: text}}})
	if err != nil {
		t.Fatalf("SaveArtifact(%q, %q): %v", session, name, err)
	}
	return resp.GetVersion()
}

func TestDeleteArtifactVersion(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.createSession(t, "app", "u1", "s1")
	for i := 1; i <= 3; i++ {
		e.saveText(t, "s1", "notes", fmt.Sprint("v", i))
	}
	del := func(version int64) error {
		_, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "notes", Version: version})
		return err
	}
	if err := del(3); err != nil {
		t.Fatalf("DeleteArtifact(version 3): %v", err)
	}
	// The one before the deleted latest is the latest now.
	load, err := e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "notes"})
	if err != nil || load.GetArtifactVersion().GetVersion() != 2 || load.GetArtifact().GetText() != "v2" {
		t.Fatalf("LoadArtifact(latest) after deleting 3 = %v, %v; want version 2", load, err)
	}
	list, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil || len(list.GetArtifacts()) != 1 || list.GetArtifacts()[0].GetVersion() != 2 {
		t.Fatalf("ListArtifacts after deleting 3 = %v, %v", list, err)
	}
	if got := e.versionsOf(t, "s1", "notes"); got != "2 1" {
		t.Fatalf("versions = %q, want \"2 1\"", got)
	}
	wantCode(t, del(3), codes.NotFound, "")
	wantCode(t, del(-1), codes.InvalidArgument, "version")
	if err := del(1); err != nil {
		t.Fatalf("DeleteArtifact(version 1): %v", err)
	}
	if got := e.versionsOf(t, "s1", "notes"); got != "2" {
		t.Fatalf("versions = %q, want \"2\"", got)
	}
	if err := del(0); err != nil { // every version left
		t.Fatalf("DeleteArtifact(every version): %v", err)
	}
	wantCode(t, del(0), codes.NotFound, "")
}

func TestUserArtifactsWithoutSession(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// No session of the user exists yet.
	if v := e.saveText(t, "", "user:prefs", "tea"); v != 1 {
		t.Fatalf("first version = %d", v)
	}
	e.createSession(t, "app", "u1", "s1")
	e.saveText(t, "s1", "user:prefs", "coffee")
	e.saveText(t, "s1", "own", "mine")
	load, err := e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", Filename: "user:prefs"})
	if err != nil || load.GetArtifact().GetText() != "coffee" || load.GetArtifactVersion().GetVersion() != 2 {
		t.Fatalf("LoadArtifact without a session = %v, %v", load, err)
	}
	if got := e.versionsOf(t, "", "user:prefs"); got != "2 1" {
		t.Fatalf("versions without a session = %q", got)
	}
	list, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1"})
	if err != nil || len(list.GetArtifacts()) != 1 || list.GetArtifacts()[0].GetFilename() != "user:prefs" {
		t.Fatalf("ListArtifacts without a session = %v, %v; want user:prefs alone", list, err)
	}
	if list, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1"}); err != nil || len(list.GetArtifacts()) != 2 {
		t.Fatalf("ListArtifacts(s1) = %v, %v; want own and user:prefs", list, err)
	}
	// A session's own names still need the session; a session that is
	// named must exist.
	_, err = e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", Filename: "own",
		Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}}})
	wantCode(t, err, codes.InvalidArgument, "session_id")
	_, err = e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "gone", Filename: "user:prefs"})
	wantCode(t, err, codes.NotFound, "")
	_, err = e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", Filename: "user:prefs"})
	wantCode(t, err, codes.InvalidArgument, "user_id")
	if _, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: "app", UserId: "u1", Filename: "user:prefs", Version: 1}); err != nil {
		t.Fatalf("DeleteArtifact without a session: %v", err)
	}
	if got := e.versionsOf(t, "s1", "user:prefs"); got != "2" {
		t.Fatalf("versions from s1 after the delete = %q", got)
	}
}

// appendTimed appends events through the API with timestamps base+offset.
func (e *env) appendTimed(t *testing.T, session string, base time.Time, body int, offsets ...time.Duration) {
	t.Helper()
	for i, d := range offsets {
		ev := bigText(i, body)
		ev.Timestamp = timestamppb.New(base.Add(d))
		if _, err := e.sessions.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "app", UserId: "u1", SessionId: session, Event: ev}); err != nil {
			t.Fatalf("AppendEvent: %v", err)
		}
	}
}

func sequencesOf(evs []*agentrunnerv1.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprint(ev.GetSequence()))
	}
	return strings.Join(out, " ")
}

func TestEventsAfterTime(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.createSession(t, "app", "u1", "s1")
	base := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	// Event 4's caller set a time before the others'.
	e.appendTimed(t, "s1", base, 10, 0, time.Second, 2*time.Second, -time.Hour, 3*time.Second, 4*time.Second)
	after := timestamppb.New(base.Add(time.Second))

	get, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after})
	if err != nil || sequencesOf(get.GetEvents()) != "3 5 6" || get.GetOmittedEvents() != 0 {
		t.Fatalf("GetSession(after_time) = [%s] (%d omitted), %v; want [3 5 6]", sequencesOf(get.GetEvents()), get.GetOmittedEvents(), err)
	}
	get, err = e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after, AfterSequence: 3, NumRecentEvents: 1})
	if err != nil || sequencesOf(get.GetEvents()) != "6" {
		t.Fatalf("GetSession(after_time, after_sequence 3, 1 recent) = [%s], %v; want [6]", sequencesOf(get.GetEvents()), err)
	}

	req := &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after, PageSize: 2}
	var listed []*agentrunnerv1.Event
	for pages := 0; ; pages++ {
		if pages > 6 {
			t.Fatal("ListEvents does not end")
		}
		resp, err := e.sessions.ListEvents(ctx, req)
		if err != nil {
			t.Fatalf("ListEvents(after_time): %v", err)
		}
		listed = append(listed, resp.GetEvents()...)
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if got := sequencesOf(listed); got != "3 5 6" {
		t.Fatalf("ListEvents(after_time) pages = [%s], want [3 5 6]", got)
	}

	bad := &timestamppb.Timestamp{Seconds: 1, Nanos: 2e9}
	_, err = e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: bad})
	wantCode(t, err, codes.InvalidArgument, "after_time")
	_, err = e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: bad})
	wantCode(t, err, codes.InvalidArgument, "after_time")
}

// TestGetSessionAfterTimeOmitted: when the events after_time selects do
// not fit in a response, omitted_events counts the selected ones left
// out, not the events before after_time.
func TestGetSessionAfterTimeOmitted(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxMessageBytes = 128 << 10 })
	ctx := t.Context()
	e.createSession(t, "app", "u1", "s1")
	base := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var offsets []time.Duration
	for i := range 30 {
		offsets = append(offsets, time.Duration(i)*time.Second)
	}
	// 30 events of 8 KiB: about seven fit in the 64 KiB a 128 KiB
	// message leaves for events.
	e.appendTimed(t, "s1", base, 8<<10, offsets...)
	after := timestamppb.New(base.Add(9 * time.Second)) // selects events 11..30
	for _, recent := range []int32{0, 15} {
		get, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after, NumRecentEvents: recent})
		if err != nil {
			t.Fatalf("GetSession(after_time, %d recent): %v", recent, err)
		}
		evs := get.GetEvents()
		want := uint64(20)
		if recent > 0 {
			want = uint64(recent)
		}
		if len(evs) == 0 || uint64(len(evs)) >= want || evs[len(evs)-1].GetSequence() != 30 {
			t.Fatalf("GetSession(after_time, %d recent) = [%s]; want the newest that fit", recent, sequencesOf(evs))
		}
		if got := get.GetOmittedEvents() + uint64(len(evs)); got != want {
			t.Fatalf("GetSession(after_time, %d recent): %d events + %d omitted = %d, want %d", recent, len(evs), get.GetOmittedEvents(), got, want)
		}
	}
}

// TestEventsAfterZeroTime: after_time at the zero instant
// (0001-01-01T00:00:00Z) filters like any other time: set, it keeps only
// the events strictly after it, so an event stamped exactly then is left
// out of GetSession and ListEvents.
func TestEventsAfterZeroTime(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.createSession(t, "app", "u1", "s1")
	zero := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	e.appendTimed(t, "s1", zero, 10, 0, time.Second)
	after := timestamppb.New(zero)
	if err := after.CheckValid(); err != nil {
		t.Fatal(err)
	}
	get, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after})
	if err != nil || sequencesOf(get.GetEvents()) != "2" || get.GetOmittedEvents() != 0 {
		t.Fatalf("GetSession(after_time 0001-01-01) = [%s] (%d omitted), %v; want [2]", sequencesOf(get.GetEvents()), get.GetOmittedEvents(), err)
	}
	get, err = e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after, NumRecentEvents: 2})
	if err != nil || sequencesOf(get.GetEvents()) != "2" || get.GetOmittedEvents() != 0 {
		t.Fatalf("GetSession(after_time 0001-01-01, 2 recent) = [%s] (%d omitted), %v; want [2]", sequencesOf(get.GetEvents()), get.GetOmittedEvents(), err)
	}
	list, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1", AfterTime: after})
	if err != nil || sequencesOf(list.GetEvents()) != "2" {
		t.Fatalf("ListEvents(after_time 0001-01-01) = [%s], %v; want [2]", sequencesOf(list.GetEvents()), err)
	}
	// Without after_time every event comes back.
	list, err = e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil || sequencesOf(list.GetEvents()) != "1 2" {
		t.Fatalf("ListEvents() = [%s], %v; want [1 2]", sequencesOf(list.GetEvents()), err)
	}
}
