package front

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/schedule"
	"github.com/agentrunner/agentrunner/store"
)

// appSchedules is implemented by Apps that have schedules of their apps
// file (server.RunnerApps).
type appSchedules interface {
	Schedules() []*agentrunnerv1.Schedule
}

// ScheduleStore returns the desk's store as a ScheduleStore; both stores
// are one.
func (d *Desk) ScheduleStore() (store.ScheduleStore, error) {
	ss, ok := d.store.(store.ScheduleStore)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this server's store keeps no schedules")
	}
	return ss, nil
}

// fileSchedules returns the apps file's schedules of the apps served.
func (d *Desk) fileSchedules() []*agentrunnerv1.Schedule {
	if a, ok := d.apps.(appSchedules); ok {
		return a.Schedules()
	}
	return nil
}

// AllSchedules returns every schedule to fire: the apps file's, then the
// store's. It is the scheduler's list.
func (d *Desk) AllSchedules(ctx context.Context) ([]*agentrunnerv1.Schedule, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	stored, err := ss.ListSchedules(ctx, "")
	if err != nil {
		return nil, err
	}
	return append(d.fileSchedules(), stored...), nil
}

// FireSchedule starts the run of sc's time at through the admission of
// StartRun, as sc's owner: in sc's fixed session (created when missing,
// the run queued behind one in progress) or a fresh one. The session and
// request id are the same on every attempt (schedule.RunIDs), so firing a
// time again returns its run.
func (d *Desk) FireSchedule(ctx context.Context, sc *agentrunnerv1.Schedule, at time.Time) (string, error) {
	sessionID, requestID := schedule.RunIDs(sc, at)
	k := store.SessionKey{App: sc.GetAppName(), User: sc.GetUserId(), Session: sessionID}
	// A run the budgets refuse leaves no empty fresh session behind.
	if err := d.CheckBudgets(ctx, k); err != nil {
		return "", err
	}
	if _, err := d.OpenSession(ctx, k); err != nil {
		return "", err
	}
	strategy := agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_REJECT
	if sc.GetSessionId() != "" {
		strategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	}
	resp, err := d.startRun(ctx, &servicev1.StartRunRequest{
		AppName: k.App, UserId: k.User, SessionId: k.Session, NewMessage: sc.GetNewMessage(),
		RequestId: requestID, MultitaskStrategy: strategy,
	}, sc.GetScheduleId())
	if err != nil {
		return "", err
	}
	return resp.GetRun().GetRunId(), nil
}

// CreateSchedule serves ScheduleService.CreateSchedule.
func (d *Desk) CreateSchedule(ctx context.Context, req *servicev1.CreateScheduleRequest) (*servicev1.CreateScheduleResponse, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	sc, err := d.newSchedule(req.GetSchedule())
	if err != nil {
		return nil, err
	}
	if err := d.AuthorizeUser(ctx, sc.GetAppName(), sc.GetUserId()); err != nil {
		return nil, err
	}
	if _, ok := d.apps.Lookup(sc.GetAppName()); !ok {
		return nil, unknownApp(sc.GetAppName())
	}
	if err := d.checkScheduleCount(ctx, ss, sc); err != nil {
		return nil, err
	}
	// The cursor first: the schedule fires from its creation on, even if
	// no scheduler sees it until later (then its missed policy decides).
	now := time.Now()
	sc.CreateTime = timestamppb.New(now)
	if _, err := ss.StartSchedule(ctx, sc.GetScheduleId(), now); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	if err := ss.CreateSchedule(ctx, sc); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.CreateScheduleResponse{Schedule: d.withState(ctx, ss, sc)}, nil
}

// MaxSchedulesPerUser bounds the API schedules one user has on one app:
// every replica's scheduler reads them all every tick, so a caller must
// not be able to grow that list without bound.
const MaxSchedulesPerUser = 100

// checkScheduleCount refuses, ResourceExhausted, a schedule whose owner
// already has MaxSchedulesPerUser on its app. Two creations racing may
// both pass the count; the bound is on a caller's growth, not exact.
func (d *Desk) checkScheduleCount(ctx context.Context, ss store.ScheduleStore, sc *agentrunnerv1.Schedule) error {
	stored, err := ss.ListSchedules(ctx, sc.GetAppName())
	if err != nil {
		return d.toStatus(ctx, err)
	}
	n := 0
	for _, o := range stored {
		if o.GetUserId() == sc.GetUserId() {
			n++
		}
	}
	if n >= MaxSchedulesPerUser {
		return status.Errorf(codes.ResourceExhausted, "user %q has %d schedules on app %q, the limit; delete one first", sc.GetUserId(), n, sc.GetAppName())
	}
	return nil
}

// newSchedule validates a schedule to create and returns the copy to
// store, with a new id and the output-only fields cleared.
func (d *Desk) newSchedule(in *agentrunnerv1.Schedule) (*agentrunnerv1.Schedule, error) {
	if in == nil {
		return nil, invalid("schedule", "required")
	}
	for _, f := range []struct{ name, v string }{{"app_name", in.GetAppName()}, {"user_id", in.GetUserId()}} {
		if err := checkID("schedule."+f.name, f.v); err != nil {
			return nil, err
		}
	}
	if err := checkOptionalID("schedule.session_id", in.GetSessionId()); err != nil {
		return nil, err
	}
	if errs := schedule.Check(in); len(errs) > 0 {
		return nil, invalid("schedule."+errs[0].Field, "%s", errs[0].Msg)
	}
	if err := d.checkContentLimits("schedule.new_message", in.GetNewMessage()); err != nil {
		return nil, err
	}
	if len(in.GetDescription()) > 4096 {
		return nil, invalid("schedule.description", "%d bytes, longer than the limit of 4096", len(in.GetDescription()))
	}
	sc := &agentrunnerv1.Schedule{
		ScheduleId: "sch-" + strings.ToLower(rand.Text()[:16]), AppName: in.GetAppName(), Cron: in.GetCron(),
		TimeZone: in.GetTimeZone(), UserId: in.GetUserId(), SessionId: in.GetSessionId(),
		NewMessage: proto.CloneOf(in.GetNewMessage()), MissedPolicy: in.GetMissedPolicy(),
		Description: in.GetDescription(), Source: agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_API,
		Paused: in.GetPaused(),
	}
	sc.NewMessage.Role = "user"
	return sc, nil
}

// findSchedule returns the schedule id names, of the apps file or the
// store, if the caller may act as its owner: PermissionDenied alike for
// one that is missing and one that is someone else's.
func (d *Desk) findSchedule(ctx context.Context, ss store.ScheduleStore, id string) (*agentrunnerv1.Schedule, error) {
	if err := checkID("schedule_id", id); err != nil {
		return nil, err
	}
	var sc *agentrunnerv1.Schedule
	for _, f := range d.fileSchedules() {
		if f.GetScheduleId() == id {
			sc = f
		}
	}
	if sc == nil {
		got, err := ss.GetSchedule(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, d.toStatus(ctx, err)
		}
		sc = got
	}
	p := principalFrom(ctx)
	switch {
	case sc != nil && (p == nil || p.MayUse(sc.GetAppName(), sc.GetUserId())):
		return sc, nil
	case p == nil || p.Admin:
		return nil, status.Errorf(codes.NotFound, "schedule %q not found", id)
	}
	return nil, d.authz.deny(ctx, codes.PermissionDenied, p.Name, methodOf(ctx), "no schedule "+strconv.Quote(id)+" this principal may use")
}

// GetSchedule serves ScheduleService.GetSchedule.
func (d *Desk) GetSchedule(ctx context.Context, req *servicev1.GetScheduleRequest) (*servicev1.GetScheduleResponse, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	sc, err := d.findSchedule(ctx, ss, req.GetScheduleId())
	if err != nil {
		return nil, err
	}
	return &servicev1.GetScheduleResponse{Schedule: d.withState(ctx, ss, sc)}, nil
}

// ListSchedules serves ScheduleService.ListSchedules.
func (d *Desk) ListSchedules(ctx context.Context, req *servicev1.ListSchedulesRequest) (*servicev1.ListSchedulesResponse, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	if err := checkID("app_name", req.GetAppName()); err != nil {
		return nil, err
	}
	if err := checkOptionalID("user_id", req.GetUserId()); err != nil {
		return nil, err
	}
	stored, err := ss.ListSchedules(ctx, req.GetAppName())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	var out []*agentrunnerv1.Schedule
	for _, sc := range append(d.fileSchedules(), stored...) {
		if sc.GetAppName() == req.GetAppName() && (req.GetUserId() == "" || sc.GetUserId() == req.GetUserId()) {
			out = append(out, d.withState(ctx, ss, sc))
		}
	}
	return &servicev1.ListSchedulesResponse{Schedules: out}, nil
}

// DeleteSchedule serves ScheduleService.DeleteSchedule.
func (d *Desk) DeleteSchedule(ctx context.Context, req *servicev1.DeleteScheduleRequest) (*servicev1.DeleteScheduleResponse, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	sc, err := d.findSchedule(ctx, ss, req.GetScheduleId())
	if err != nil {
		return nil, err
	}
	if sc.GetSource() == agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_APPS_FILE {
		return nil, status.Errorf(codes.FailedPrecondition, "schedule %q is defined in the apps file: remove it there and reload", sc.GetScheduleId())
	}
	if err := ss.DeleteSchedule(ctx, sc.GetScheduleId()); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.DeleteScheduleResponse{}, nil
}

// PauseSchedule serves ScheduleService.PauseSchedule.
func (d *Desk) PauseSchedule(ctx context.Context, req *servicev1.PauseScheduleRequest) (*servicev1.PauseScheduleResponse, error) {
	sc, err := d.setPaused(ctx, req.GetScheduleId(), true)
	if err != nil {
		return nil, err
	}
	return &servicev1.PauseScheduleResponse{Schedule: sc}, nil
}

// ResumeSchedule serves ScheduleService.ResumeSchedule.
func (d *Desk) ResumeSchedule(ctx context.Context, req *servicev1.ResumeScheduleRequest) (*servicev1.ResumeScheduleResponse, error) {
	sc, err := d.setPaused(ctx, req.GetScheduleId(), false)
	if err != nil {
		return nil, err
	}
	return &servicev1.ResumeScheduleResponse{Schedule: sc}, nil
}

// setPaused pauses or resumes an API schedule the caller may use.
func (d *Desk) setPaused(ctx context.Context, id string, paused bool) (*agentrunnerv1.Schedule, error) {
	ss, err := d.ScheduleStore()
	if err != nil {
		return nil, err
	}
	sc, err := d.findSchedule(ctx, ss, id)
	if err != nil {
		return nil, err
	}
	if sc.GetSource() == agentrunnerv1.ScheduleSource_SCHEDULE_SOURCE_APPS_FILE {
		return nil, status.Errorf(codes.FailedPrecondition, "schedule %q is defined in the apps file: set paused there and reload", id)
	}
	if sc, err = ss.SetSchedulePaused(ctx, id, paused); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return d.withState(ctx, ss, sc), nil
}

// withState returns a copy of sc with its last firing and next time.
func (d *Desk) withState(ctx context.Context, ss store.ScheduleStore, sc *agentrunnerv1.Schedule) *agentrunnerv1.Schedule {
	out := proto.CloneOf(sc)
	now := time.Now()
	st, err := ss.ScheduleState(ctx, sc.GetScheduleId())
	switch {
	case err == nil:
		if !st.Last.Time.IsZero() {
			out.LastFireTime = timestamppb.New(st.Last.Time)
			out.LastRunId, out.LastError = st.Last.RunID, st.Last.Error
		}
		if st.Cursor.After(now) {
			now = st.Cursor
		}
	case !errors.Is(err, store.ErrNotFound):
		d.log.Warn("schedule state", "schedule", sc.GetScheduleId(), "err", err)
	}
	if next := schedule.NextTime(sc, now); !next.IsZero() && !sc.GetPaused() {
		out.NextFireTime = timestamppb.New(next)
	}
	return out
}
