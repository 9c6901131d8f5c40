package server

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// spent is one model call stored through AppendEvent, and what it adds
// to the totals.
type spent struct {
	user, model string
	day         string // "YYYY-MM-DD"
	prompt, out int32
	micros      int64 // 0: unpriced
}

func (c spent) event(i int) *agentrunnerv1.Event {
	day, err := time.Parse(time.DateOnly, c.day)
	if err != nil {
		panic(err)
	}
	ev := &agentrunnerv1.Event{
		Author: "helper", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "ok"}}}},
		// Late in the day, so that a time zone slip would show.
		Timestamp:     timestamppb.New(day.Add(23*time.Hour + time.Duration(i)*time.Second)),
		ModelVersion:  c.model,
		UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: c.prompt, CandidatesTokenCount: c.out, TotalTokenCount: c.prompt + c.out},
	}
	if c.micros > 0 {
		ev.Cost = &agentrunnerv1.Cost{Currency: "USD", Micros: c.micros, Model: c.model}
	}
	return ev
}

// newClockedEnv is newEnv on a store whose clock is clock: the ledger
// counts a call on the store's day when the runner stores it.
func newClockedEnv(t *testing.T, clock *storetest.Clock, opts ...envOption) *env {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "agentrunner.db"), boltstore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	return startEnv(t, st, cfg, logs)
}

// storeSpent stores each call as the runner does (the store's
// AppendEvent: a client's events count for nothing) in its user's session
// "s" (created first, as root when auth is on), on its day by the
// store's clock.
func (e *env) storeSpent(t *testing.T, app string, clock *storetest.Clock, calls []spent) {
	t.Helper()
	ctx := as(t.Context(), "root")
	made := map[string]bool{}
	for i, c := range calls {
		if !made[c.user] {
			if _, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: app, UserId: c.user, SessionId: "s"}); err != nil {
				t.Fatal(err)
			}
			made[c.user] = true
		}
		ev := c.event(i)
		clock.Set(ev.GetTimestamp().AsTime())
		if _, err := e.store.AppendEvent(ctx, store.SessionKey{App: app, User: c.user, Session: "s"}, ev); err != nil {
			t.Fatal(err)
		}
	}
}

// wantUsage is what GetUsage must answer for the calls of user ("" for
// all) between two days, computed from the calls themselves.
func wantUsage(calls []spent, user, from, to string) *servicev1.GetUsageResponse {
	want := &servicev1.GetUsageResponse{Total: &agentrunnerv1.Spend{}, StartDate: from, EndDate: to}
	for i, c := range calls {
		if (user != "" && c.user != user) || c.day < from || c.day > to {
			continue
		}
		ev := c.event(i)
		want.Total = store.AddEventSpend(want.Total, ev)
		j := slices.IndexFunc(want.Days, func(d *servicev1.DailyUsage) bool { return d.Date == c.day && d.Model == c.model })
		if j < 0 {
			want.Days = append(want.Days, &servicev1.DailyUsage{Date: c.day, Model: c.model})
			j = len(want.Days) - 1
		}
		want.Days[j].Spend = store.AddEventSpend(want.Days[j].Spend, ev)
	}
	slices.SortFunc(want.Days, func(a, b *servicev1.DailyUsage) int {
		return strings.Compare(a.Date+"\x00"+a.Model, b.Date+"\x00"+b.Model)
	})
	return want
}

// usageCalls spread over two users, three models (one unpriced) and the
// edges of the ranges the tests ask for.
var usageCalls = []spent{
	{user: "alice", model: "flash", day: "2024-02-09", prompt: 100, out: 10, micros: 120},
	{user: "alice", model: "flash", day: "2024-02-10", prompt: 200, out: 20, micros: 240},
	{user: "alice", model: "pro", day: "2024-02-10", prompt: 300, out: 30, micros: 1_500},
	{user: "alice", model: "flash", day: "2024-02-10", prompt: 50, out: 5, micros: 60},
	{user: "bob", model: "flash", day: "2024-02-10", prompt: 1000, out: 100, micros: 1_200},
	{user: "alice", model: "local", day: "2024-03-10", prompt: 7, out: 3},
	{user: "bob", model: "pro", day: "2024-03-11", prompt: 9, out: 1, micros: 50},
	{user: "alice", model: "flash", day: "2025-03-10", prompt: 1, out: 1, micros: 2},
}

// TestGetUsageRanges: GetUsage answers the calls of a user, or of every
// user, within the range asked (ends included, by UTC day), by day and
// model, with their sum; an empty start is 30 days before the end.
func TestGetUsageRanges(t *testing.T) {
	clock := &storetest.Clock{}
	e := newClockedEnv(t, clock, withRunnerApps(t, customApp("echo", sayHi)))
	e.storeSpent(t, "echo", clock, usageCalls)
	usage := servicev1.NewUsageServiceClient(e.conn)
	for _, c := range []struct {
		name, user, start, end string
		wantFrom, wantTo       string
	}{
		{"one day", "alice", "2024-02-10", "2024-02-10", "2024-02-10", "2024-02-10"},
		{"a user's month", "alice", "2024-02-01", "2024-03-31", "2024-02-01", "2024-03-31"},
		{"every user", "", "2024-02-01", "2024-03-31", "2024-02-01", "2024-03-31"},
		// 2024 is a leap year: March 10 less 29 days is February 10.
		{"empty start", "alice", "", "2024-03-10", "2024-02-10", "2024-03-10"},
		{"empty start, every user", "", "", "2024-03-11", "2024-02-11", "2024-03-11"},
		{"the longest range", "", "2024-03-10", "2025-03-10", "2024-03-10", "2025-03-10"},
		{"nothing spent", "bob", "2023-01-01", "2023-12-31", "2023-01-01", "2023-12-31"},
		{"a user who never called", "carol", "2024-02-01", "2024-03-31", "2024-02-01", "2024-03-31"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := usage.GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "echo", UserId: c.user, StartDate: c.start, EndDate: c.end})
			if err != nil {
				t.Fatal(err)
			}
			want := wantUsage(usageCalls, c.user, c.wantFrom, c.wantTo)
			if !proto.Equal(got, want) {
				t.Errorf("GetUsage(%s, %q..%q):\n got %v\nwant %v", c.user, c.start, c.end, got, want)
			}
		})
	}
}

// TestGetUsageDefaultsToToday: with no dates the range is the 30 UTC days
// ending today.
func TestGetUsageDefaultsToToday(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	before := time.Now().UTC()
	got, err := servicev1.NewUsageServiceClient(e.conn).GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "echo", UserId: "alice"})
	after := time.Now().UTC()
	if err != nil {
		t.Fatal(err)
	}
	// The call may straddle midnight: either day is right.
	if end := got.GetEndDate(); end != store.Day(before) && end != store.Day(after) {
		t.Fatalf("end_date = %q, want today (%s)", end, store.Day(before))
	}
	end, _ := time.Parse(time.DateOnly, got.GetEndDate())
	if want := store.Day(end.AddDate(0, 0, -29)); got.GetStartDate() != want {
		t.Errorf("start_date = %q, want %q (29 days before %s)", got.GetStartDate(), want, got.GetEndDate())
	}
	if len(got.GetDays()) != 0 || got.GetTotal().GetModelCalls() != 0 {
		t.Errorf("nothing was spent, GetUsage says %v", got)
	}
}

// TestGetUsageInvalid: malformed or reversed dates, ranges over 366 days
// and a missing app are InvalidArgument naming the field; an app not
// served here is NotFound; a store without totals is FailedPrecondition.
func TestGetUsageInvalid(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	usage := servicev1.NewUsageServiceClient(e.conn)
	for _, c := range []struct {
		name  string
		req   *servicev1.GetUsageRequest
		code  codes.Code
		field string
	}{
		{"no app", &servicev1.GetUsageRequest{UserId: "u"}, codes.InvalidArgument, "app_name"},
		{"a control character in user", &servicev1.GetUsageRequest{AppName: "echo", UserId: "u\n"}, codes.InvalidArgument, "user_id"},
		{"no such month", &servicev1.GetUsageRequest{AppName: "echo", StartDate: "2024-13-01", EndDate: "2024-12-31"}, codes.InvalidArgument, "start_date"},
		{"no such day", &servicev1.GetUsageRequest{AppName: "echo", EndDate: "2023-02-29"}, codes.InvalidArgument, "end_date"},
		{"not a date", &servicev1.GetUsageRequest{AppName: "echo", EndDate: "yesterday"}, codes.InvalidArgument, "end_date"},
		{"unpadded", &servicev1.GetUsageRequest{AppName: "echo", StartDate: "2024-1-5", EndDate: "2024-01-31"}, codes.InvalidArgument, "start_date"},
		{"a timestamp", &servicev1.GetUsageRequest{AppName: "echo", EndDate: "2024-01-05T00:00:00Z"}, codes.InvalidArgument, "end_date"},
		{"start after end", &servicev1.GetUsageRequest{AppName: "echo", StartDate: "2024-02-02", EndDate: "2024-02-01"}, codes.InvalidArgument, "start_date"},
		{"367 days", &servicev1.GetUsageRequest{AppName: "echo", StartDate: "2024-03-10", EndDate: "2025-03-11"}, codes.InvalidArgument, "start_date"},
		{"a start long before the default end", &servicev1.GetUsageRequest{AppName: "echo", StartDate: "2000-01-01"}, codes.InvalidArgument, "start_date"},
		{"unknown app", &servicev1.GetUsageRequest{AppName: "nope", UserId: "u"}, codes.NotFound, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := usage.GetUsage(t.Context(), c.req)
			wantCode(t, err, c.code, c.field)
		})
	}
	t.Run("unknown app names it", func(t *testing.T) {
		_, err := usage.GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "nope"})
		if msg := statusMessage(err); !strings.Contains(msg, `"nope"`) {
			t.Errorf("message %q does not name the app", msg)
		}
	})
	t.Run("a store without totals", func(t *testing.T) {
		// Hides every method of the store but Store's.
		plain := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withStore(func(s Store) Store { return struct{ Store }{s} }))
		_, err := servicev1.NewUsageServiceClient(plain.conn).GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "echo", UserId: "u"})
		wantCode(t, err, codes.FailedPrecondition, "")
	})
}

// TestGetUsageAuthorization: a principal reads the usage of the users it
// may act as on its apps; an app's usage, every user together, is for
// principals allowed every user (admins); the rest is PermissionDenied
// and says why.
func TestGetUsageAuthorization(t *testing.T) {
	clock := &storetest.Clock{}
	e := newClockedEnv(t, clock, withRunnerApps(t, customApp("echo", sayHi), customApp("other", sayHi)), withAuth(t, matrixAuth))
	e.storeSpent(t, "echo", clock, usageCalls)
	usage := servicev1.NewUsageServiceClient(e.conn)
	for _, c := range []struct {
		caller, app, user string
		code              codes.Code
		msg               string
	}{
		{"alice", "echo", "alice", codes.OK, ""},
		{"alice", "echo", "bob", codes.PermissionDenied, `not granted user "bob" on app "echo"`},
		{"alice", "echo", "", codes.PermissionDenied, "a request for every user (no user_id) is for admins"},
		{"alice", "other", "alice", codes.PermissionDenied, `not granted user "alice" on app "other"`},
		{"bob", "other", "bob", codes.OK, ""},
		{"bob", "echo", "", codes.PermissionDenied, "a request for every user (no user_id) is for admins"},
		{"root", "echo", "", codes.OK, ""},
		{"root", "echo", "alice", codes.OK, ""},
		{"", "echo", "alice", codes.Unauthenticated, ""},
	} {
		name := fmt.Sprintf("%s on %s/%s", c.caller, c.app, c.user)
		got, err := usage.GetUsage(as(t.Context(), c.caller), &servicev1.GetUsageRequest{AppName: c.app, UserId: c.user, StartDate: "2024-02-01", EndDate: "2024-03-31"})
		wantCode(t, err, c.code, "")
		if c.msg != "" && statusMessage(err) != c.msg {
			t.Errorf("%s: message %q, want %q", name, statusMessage(err), c.msg)
		}
		if c.code == codes.OK && c.app == "echo" {
			if want := wantUsage(usageCalls, c.user, "2024-02-01", "2024-03-31"); !proto.Equal(got, want) {
				t.Errorf("%s:\n got %v\nwant %v", name, got, want)
			}
		}
	}
}
