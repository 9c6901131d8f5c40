package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/schedule"
	"github.com/agentrunner/agentrunner/server/internal/front"
	"github.com/agentrunner/agentrunner/store"
)

// scheduleCases are the matrix cases of ScheduleService's scoped RPC;
// the others are authorized by the schedule (TestScheduleAccess).
func scheduleCases() []rpcCase {
	return []rpcCase{
		{method: servicev1.ScheduleService_ListSchedules_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewScheduleServiceClient(e.conn).ListSchedules(ctx, &servicev1.ListSchedulesRequest{AppName: f.app, UserId: f.user})
			return err
		}},
	}
}

// scheduledApp is customApp with a schedule of the apps file.
func scheduledApp(name string) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		a := customApp(name, sayHi)(t)
		a.Schedules = []*agentrunnerv1.Schedule{schedule.FromConfig(name, &agentrunnerv1.ScheduleConfig{
			Name: "nightly", Cron: "0 3 * * *", TimeZone: "Europe/Paris", UserId: "alice", Message: "triage",
		})}
		return a
	}
}

func newSchedule(app, user, cron string) *servicev1.CreateScheduleRequest {
	return &servicev1.CreateScheduleRequest{Schedule: &agentrunnerv1.Schedule{
		AppName: app, UserId: user, Cron: cron, NewMessage: text("digest"), ScheduleId: "ignored",
	}}
}

// TestScheduleAccess: a schedule is its owner's and the admins'; a
// principal that may not see it gets the same answer whether it exists or
// not; the apps file's cannot be deleted; bad input is InvalidArgument
// naming the field.
func TestScheduleAccess(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, scheduledApp("echo"), customApp("other", sayHi)), withAuth(t, matrixAuth))
	sc := servicev1.NewScheduleServiceClient(e.conn)
	alice, bob, root := as(t.Context(), "alice"), as(t.Context(), "bob"), as(t.Context(), "root")
	created, err := sc.CreateSchedule(alice, newSchedule("echo", "alice", "*/5 * * * *"))
	if err != nil {
		t.Fatal(err)
	}
	mine := created.GetSchedule()
	if !strings.HasPrefix(mine.GetScheduleId(), "sch-") || mine.GetSource() != agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_API ||
		mine.GetNextFireTime().AsTime().Minute()%5 != 0 || mine.GetCreateTime() == nil {
		t.Fatalf("created: %v", mine)
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		req  *servicev1.CreateScheduleRequest
		code codes.Code
		msg  string
	}{
		{"for another user", alice, newSchedule("echo", "bob", "@daily"), codes.PermissionDenied, `not granted user "bob"`},
		{"on another app", alice, newSchedule("other", "alice", "@daily"), codes.PermissionDenied, `on app "other"`},
		{"unknown app", root, newSchedule("nowhere", "alice", "@daily"), codes.NotFound, "nowhere"},
		{"bad cron", alice, newSchedule("echo", "alice", "61 * * * *"), codes.InvalidArgument, "schedule.cron"},
		{"no owner", root, newSchedule("echo", "", "@daily"), codes.InvalidArgument, "schedule.user_id"},
		{"no schedule", alice, &servicev1.CreateScheduleRequest{}, codes.InvalidArgument, "schedule: required"},
	} {
		_, err := sc.CreateSchedule(tc.ctx, tc.req)
		if status.Code(err) != tc.code || !strings.Contains(statusMessage(err), tc.msg) {
			t.Errorf("create %s: %v, want %v with %q", tc.name, err, tc.code, tc.msg)
		}
	}
	zone := newSchedule("echo", "alice", "@daily")
	zone.Schedule.TimeZone = "Mars/Base"
	if _, err := sc.CreateSchedule(alice, zone); status.Code(err) != codes.InvalidArgument || !strings.Contains(statusMessage(err), "schedule.time_zone") {
		t.Errorf("create in a bad zone: %v", err)
	}
	for _, id := range []string{mine.GetScheduleId(), "sch-missing"} {
		_, err := sc.GetSchedule(bob, &servicev1.GetScheduleRequest{ScheduleId: id})
		if status.Code(err) != codes.PermissionDenied || statusMessage(err) != `no schedule "`+id+`" this principal may use` {
			t.Errorf("get %s as bob: %v", id, err)
		}
		if _, err := sc.DeleteSchedule(bob, &servicev1.DeleteScheduleRequest{ScheduleId: id}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("delete %s as bob: %v", id, err)
		}
	}
	list, err := sc.ListSchedules(alice, &servicev1.ListSchedulesRequest{AppName: "echo", UserId: "alice"})
	if err != nil || len(list.GetSchedules()) != 2 || list.GetSchedules()[0].GetScheduleId() != "echo/nightly" ||
		list.GetSchedules()[1].GetScheduleId() != mine.GetScheduleId() || list.GetSchedules()[0].GetNextFireTime().AsTime().UTC().Hour() != 2 {
		t.Fatalf("list as alice: %v, %v", list, err)
	}
	if _, err := sc.ListSchedules(alice, &servicev1.ListSchedulesRequest{AppName: "echo"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("list every user's as alice: %v", err)
	}
	if _, err := sc.DeleteSchedule(root, &servicev1.DeleteScheduleRequest{ScheduleId: "echo/nightly"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("delete the apps file's: %v", err)
	}
	if _, err := sc.PauseSchedule(root, &servicev1.PauseScheduleRequest{ScheduleId: "echo/nightly"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("pause the apps file's: %v", err)
	}
	if _, err := sc.PauseSchedule(bob, &servicev1.PauseScheduleRequest{ScheduleId: mine.GetScheduleId()}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("pause alice's as bob: %v", err)
	}
	paused, err := sc.PauseSchedule(alice, &servicev1.PauseScheduleRequest{ScheduleId: mine.GetScheduleId()})
	if err != nil || !paused.GetSchedule().GetPaused() || paused.GetSchedule().GetNextFireTime() != nil {
		t.Fatalf("pause: %v, %v", paused, err)
	}
	resumed, err := sc.ResumeSchedule(alice, &servicev1.ResumeScheduleRequest{ScheduleId: mine.GetScheduleId()})
	if err != nil || resumed.GetSchedule().GetPaused() || resumed.GetSchedule().GetNextFireTime() == nil {
		t.Fatalf("resume: %v, %v", resumed, err)
	}
	if _, err := sc.DeleteSchedule(alice, &servicev1.DeleteScheduleRequest{ScheduleId: mine.GetScheduleId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.GetSchedule(root, &servicev1.GetScheduleRequest{ScheduleId: mine.GetScheduleId()}); status.Code(err) != codes.NotFound {
		t.Errorf("get deleted as root: %v", err)
	}
}

// TestScheduleFires: a scheduler over the server fires a schedule made
// through the API: a run of its owner, in a fresh session, whose record
// names the schedule, shown as the schedule's last run.
func TestScheduleFires(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	sc := servicev1.NewScheduleServiceClient(e.conn)
	created, err := sc.CreateSchedule(t.Context(), newSchedule("echo", "alice", "@every 1s"))
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetSchedule().GetScheduleId()
	sched, err := e.grpc.srv.NewScheduler("test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var got *agentrunnerv1.Schedule
	for range 50 { // a time is due within a second
		if err := sched.Step(t.Context()); err != nil {
			t.Fatal(err)
		}
		res, err := sc.GetSchedule(t.Context(), &servicev1.GetScheduleRequest{ScheduleId: id})
		if err != nil {
			t.Fatal(err)
		}
		if got = res.GetSchedule(); got.GetLastRunId() != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.GetLastRunId() == "" || got.GetLastError() != "" {
		t.Fatalf("schedule after its first time: %v", got)
	}
	run, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: got.GetLastRunId()})
	if err != nil {
		t.Fatal(err)
	}
	r := run.GetRun()
	session, request := schedule.RunIDs(got, got.GetLastFireTime().AsTime())
	if r.GetScheduleId() != id || r.GetUserId() != "alice" || r.GetSessionId() != session || r.GetRequestId() != request {
		t.Errorf("run: %v", r)
	}
}

// TestScheduleRefusalRecorded: a firing the admission refuses (here: its
// app is no longer served) is recorded as the schedule's last error, once
// per time, and leaves no session.
func TestScheduleRefusalRecorded(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	gone := &agentrunnerv1.Schedule{ScheduleId: "sch-gone", AppName: "gone", UserId: "alice", Cron: "@every 1s",
		NewMessage: text("hi"), Source: agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_API}
	if err := e.store.CreateSchedule(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	sched, err := e.grpc.srv.NewScheduler("test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 { // a time is due within a second
		if err := sched.Step(t.Context()); err != nil {
			t.Fatal(err)
		}
		if st, err := e.store.ScheduleState(t.Context(), "sch-gone"); err == nil && st.Last.Finished {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, err := e.store.ScheduleState(t.Context(), "sch-gone")
	if err != nil || !strings.Contains(st.Last.Error, `app "gone" is not served`) || st.Last.RunID != "" {
		t.Fatalf("state: %+v, %v", st, err)
	}
	fires, err := e.store.ListFires(t.Context(), "sch-gone", 100)
	if err != nil || len(fires) > 2 {
		t.Errorf("claims: %d, %v; want one a second", len(fires), err)
	}
	if sessions, _, err := e.store.ListSessions(t.Context(), "gone", "alice", store.Page{}); err != nil || len(sessions) != 0 {
		t.Errorf("sessions of the refused runs: %v, %v", sessions, err)
	}
}

// TestScheduleCountBounded: a user's API schedules on an app stop at
// front.MaxSchedulesPerUser (every scheduler reads them all each tick);
// another user, and the same user after a delete, may still create.
func TestScheduleCountBounded(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	sc := servicev1.NewScheduleServiceClient(e.conn)
	var last string
	for i := range front.MaxSchedulesPerUser {
		got, err := sc.CreateSchedule(t.Context(), newSchedule("echo", "alice", "0 3 * * *"))
		if err != nil {
			t.Fatalf("schedule %d: %v", i, err)
		}
		last = got.GetSchedule().GetScheduleId()
	}
	_, err := sc.CreateSchedule(t.Context(), newSchedule("echo", "alice", "0 3 * * *"))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("schedule %d: %v, want ResourceExhausted", front.MaxSchedulesPerUser+1, err)
	}
	if _, err := sc.CreateSchedule(t.Context(), newSchedule("echo", "bob", "0 3 * * *")); err != nil {
		t.Fatalf("another user's schedule: %v", err)
	}
	if _, err := sc.DeleteSchedule(t.Context(), &servicev1.DeleteScheduleRequest{ScheduleId: last}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CreateSchedule(t.Context(), newSchedule("echo", "alice", "0 3 * * *")); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}
