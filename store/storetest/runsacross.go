package storetest

import (
	"fmt"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// activeStatuses is what the console's runs board asks for.
var activeStatuses = []agentrunnerv1.RunStatus{runPending, runRunning, runInput}

// listOf pages through ListRunsOf(f) with pages of size and renders the
// runs as "id:STATUS".
func listOf(t *testing.T, s store.Store, f store.RunFilter, size int) string {
	t.Helper()
	var out []string
	page := store.Page{Size: size}
	for n := 0; ; n++ {
		if n > 40 {
			t.Fatal("ListRunsOf does not terminate")
		}
		list, next, err := s.ListRunsOf(t.Context(), f, page)
		if err != nil {
			t.Fatalf("ListRunsOf(%+v): %v", f, err)
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

// wantList checks ListRunsOf(f) at several page sizes.
func wantList(t *testing.T, s store.Store, f store.RunFilter, want string) {
	t.Helper()
	for _, size := range []int{1, 2, 3, 100} {
		if got := listOf(t, s, f, size); got != want {
			t.Fatalf("ListRunsOf(%+v) with pages of %d:\n got %s\nwant %s", f, size, got, want)
		}
	}
}

// seedAcross makes runs in three sessions of u1, one of u2 and one of
// another app, some stored with an event and some on their own, created
// in an order that interleaves the sessions.
func seedAcross(t *testing.T, s store.Store) {
	s1, s2, s3 := key("app", "u1", "s1"), key("app", "u1", "s2"), key("app", "u1", "s3")
	v1, o1 := key("app", "u2", "s1"), key("other", "u1", "s1")
	for _, k := range []store.SessionKey{s1, s2, s3, v1, o1} {
		create(t, s, k, nil)
	}
	appendRun(t, s, s1, textEvent("user", "one", nil), runRec(s1, "r1", 1, runSucceeded))
	putRun(t, s, runRec(s2, "r2", 2, runInput))
	appendRun(t, s, s3, textEvent("user", "three", nil), runRec(s3, "r3", 3, runPending))
	putRun(t, s, runRec(s1, "r4", 4, runRunning))
	appendRun(t, s, s2, textEvent("user", "five", nil), runRec(s2, "r5", 5, runFailed))
	putRun(t, s, runRec(s3, "r6", 6, runCancelled))
	putRun(t, s, runRec(v1, "q0", 0, runSucceeded))
	appendRun(t, s, v1, textEvent("user", "q", nil), runRec(v1, "q7", 7, runRunning))
	putRun(t, s, runRec(o1, "o8", 8, runRunning))
}

// testRunListAcross: ListRunsOf lists a user's runs across their
// sessions, and an app's across its users, newest first, paged, with a
// status filter, from indexes that follow every status change.
func testRunListAcross(t *testing.T, s store.Store) {
	seedAcross(t, s)
	user := store.RunFilter{App: "app", User: "u1"}
	app := store.RunFilter{App: "app"}
	active := func(f store.RunFilter) store.RunFilter { f.Statuses = activeStatuses; return f }
	wantList(t, s, user, "r6:CANCELLED r5:FAILED r4:RUNNING r3:PENDING r2:INPUT_REQUIRED r1:SUCCEEDED")
	wantList(t, s, active(user), "r4:RUNNING r3:PENDING r2:INPUT_REQUIRED")
	wantList(t, s, app, "q7:RUNNING r6:CANCELLED r5:FAILED r4:RUNNING r3:PENDING r2:INPUT_REQUIRED r1:SUCCEEDED q0:SUCCEEDED")
	wantList(t, s, active(app), "q7:RUNNING r4:RUNNING r3:PENDING r2:INPUT_REQUIRED")
	wantList(t, s, store.RunFilter{App: "app", User: "u1", Statuses: []agentrunnerv1.RunStatus{runFailed, runSucceeded}}, "r5:FAILED r1:SUCCEEDED")
	wantList(t, s, store.RunFilter{App: "app", User: "u1", Statuses: []agentrunnerv1.RunStatus{runInput}}, "r2:INPUT_REQUIRED")
	wantList(t, s, store.RunFilter{App: "other"}, "o8:RUNNING")
	wantList(t, s, store.RunFilter{App: "app", User: "nobody"}, "")
	wantList(t, s, store.RunFilter{App: "none", Statuses: activeStatuses}, "")

	// Status changes move runs in and out of the active listing at once.
	putRun(t, s, withStatus(getRun(t, s, "r4"), runSucceeded))
	putRun(t, s, withStatus(getRun(t, s, "r1"), runInput))
	wantList(t, s, active(user), "r3:PENDING r2:INPUT_REQUIRED r1:INPUT_REQUIRED")
	s.PutRunLater(withStatus(getRun(t, s, "r3"), runSucceeded))
	s.PutRunLater(runRec(key("app", "u1", "s1"), "r9", 9, runPending))
	wantList(t, s, active(user), "r9:PENDING r2:INPUT_REQUIRED r1:INPUT_REQUIRED")
	wantList(t, s, user, "r9:PENDING r6:CANCELLED r5:FAILED r4:SUCCEEDED r3:SUCCEEDED r2:INPUT_REQUIRED r1:INPUT_REQUIRED")
	putRun(t, s, runRec(key("app", "u1", "s2"), "r10", 10, runSucceeded)) // a commit that writes the queue
	wantList(t, s, active(user), "r9:PENDING r2:INPUT_REQUIRED r1:INPUT_REQUIRED")

	// With a session, the session's runs, filtered.
	wantList(t, s, store.RunFilter{App: "app", User: "u1", Session: "s1", Statuses: activeStatuses}, "r9:PENDING r1:INPUT_REQUIRED")
	wantList(t, s, store.RunFilter{App: "app", User: "u1", Session: "s2"}, "r10:SUCCEEDED r5:FAILED r2:INPUT_REQUIRED")

	// A deleted session's runs leave every listing.
	if err := s.DeleteSession(t.Context(), key("app", "u1", "s2")); err != nil {
		t.Fatal(err)
	}
	wantList(t, s, active(app), "r9:PENDING q7:RUNNING r1:INPUT_REQUIRED")
	wantList(t, s, user, "r9:PENDING r6:CANCELLED r4:SUCCEEDED r3:SUCCEEDED r1:INPUT_REQUIRED")
}

// testRunListAcrossPagesStable: a page token keeps its place when the
// statuses change between pages, and runs created after the first page
// (newer) do not show up on later pages.
func testRunListAcrossPagesStable(t *testing.T, s store.Store) {
	seedAcross(t, s)
	user := store.RunFilter{App: "app", User: "u1"}
	first, next, err := s.ListRunsOf(t.Context(), user, store.Page{Size: 2})
	if err != nil || runIDs(first) != "r6 r5" || next == "" {
		t.Fatalf("first page = %s, %q, %v", runIDs(first), next, err)
	}
	putRun(t, s, runRec(key("app", "u1", "s1"), "r20", 20, runRunning))
	user.Statuses = activeStatuses
	rest, next, err := s.ListRunsOf(t.Context(), user, store.Page{Size: 10, Token: next})
	if err != nil || runIDs(rest) != "r4 r3 r2" || next != "" {
		t.Fatalf("next page of active runs = %s, %q, %v", runIDs(rest), next, err)
	}
}

// testRunListAcrossInvalid: filters and tokens no listing serves are
// ErrInvalidArgument; a missing session is ErrNotFound.
func testRunListAcrossInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	seedAcross(t, s)
	_, userTok, err := s.ListRunsOf(ctx, store.RunFilter{App: "app", User: "u1"}, store.Page{Size: 1})
	if err != nil || userTok == "" {
		t.Fatalf("ListRunsOf: %q, %v", userTok, err)
	}
	_, sessTok, err := s.ListRuns(ctx, key("app", "u1", "s1"), store.Page{Size: 1})
	if err != nil || sessTok == "" {
		t.Fatalf("ListRuns: %q, %v", sessTok, err)
	}
	for _, tc := range []struct {
		name string
		f    store.RunFilter
		tok  string
	}{
		{"no app", store.RunFilter{User: "u1"}, ""},
		{"session without user", store.RunFilter{App: "app", Session: "s1"}, ""},
		{"unspecified status", store.RunFilter{App: "app", User: "u1", Statuses: []agentrunnerv1.RunStatus{0}}, ""},
		{"unknown status", store.RunFilter{App: "app", User: "u1", Statuses: []agentrunnerv1.RunStatus{99}}, ""},
		{"malformed token", store.RunFilter{App: "app", User: "u1"}, "!!"},
		{"another user's token", store.RunFilter{App: "app", User: "u2"}, userTok},
		{"a user's token for the app", store.RunFilter{App: "app"}, userTok},
		{"a session's token across sessions", store.RunFilter{App: "app", User: "u1"}, sessTok},
		{"a listing's token for a session", store.RunFilter{App: "app", User: "u1", Session: "s1"}, userTok},
	} {
		_, _, err := s.ListRunsOf(ctx, tc.f, store.Page{Token: tc.tok})
		wantErr(t, err, store.ErrInvalidArgument, tc.name)
	}
	_, _, err = s.ListRunsOf(ctx, store.RunFilter{App: "app", User: "u1", Session: "nope"}, store.Page{})
	wantErr(t, err, store.ErrNotFound, "ListRunsOf of a missing session")
}

// testRunListAcrossFilteredPages: a status filter that keeps one run in
// three, paged three at a time across many sessions, lists every kept run
// once, newest first, and ends.
func testRunListAcrossFilteredPages(t *testing.T, s store.Store) {
	statuses := []agentrunnerv1.RunStatus{runSucceeded, runFailed, runCancelled}
	var want []string
	for i := range 30 {
		k := key("app", "u1", fmt.Sprintf("s%d", i%6))
		if i < 6 {
			create(t, s, k, nil)
		}
		putRun(t, s, runRec(k, fmt.Sprintf("r%02d", i), i+1, statuses[i%3]))
		if i%3 == 1 {
			want = append([]string{fmt.Sprintf("r%02d", i)}, want...)
		}
	}
	f := store.RunFilter{App: "app", User: "u1", Statuses: []agentrunnerv1.RunStatus{runFailed}}
	var got []string
	token := ""
	for range 20 {
		runs, next, err := s.ListRunsOf(t.Context(), f, store.Page{Size: 3, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			got = append(got, r.GetRunId())
		}
		if token = next; token == "" {
			break
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("FAILED runs across sessions, 3 a page: %v, want %v", got, want)
	}
}
