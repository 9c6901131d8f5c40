package front

import (
	"context"
	"crypto/rand"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/store"
)

// forker returns the desk's store as a store.Forker, or Unimplemented.
func (d *Desk) forker() (store.Forker, error) {
	f, ok := d.store.(store.Forker)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this server's store does not fork or rewind sessions")
	}
	return f, nil
}

// ForkSession copies a session up to one of its events into a new one
// (store.PlanFork), written in one transaction.
func (d *Desk) ForkSession(ctx context.Context, req *servicev1.ForkSessionRequest) (*servicev1.ForkSessionResponse, error) {
	src, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	if err := checkOptionalID("new_user_id", req.GetNewUserId()); err != nil {
		return nil, err
	}
	if err := checkOptionalID("new_session_id", req.GetNewSessionId()); err != nil {
		return nil, err
	}
	f, err := d.forker()
	if err != nil {
		return nil, err
	}
	target := store.SessionKey{App: src.App, User: src.User, Session: req.GetNewSessionId()}
	if u := req.GetNewUserId(); u != "" {
		target.User = u
	}
	plan, err := store.PlanFork(ctx, d.store, src, req.GetUpToSequence(), target)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	sess, err := f.ForkSession(ctx, plan)
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ForkSessionResponse{Session: sess}, nil
}

// sessionRunLive is implemented by *runner.Runner: whether a run of a
// session is live in this process, its record stored or not.
type sessionRunLive interface {
	SessionRunLive(userID, sessionID string) bool
}

// noLiveRun refuses a rewind of session k while this process runs one of
// its runs (or queues one): its record may not be stored yet, where the
// store's check looks.
func (d *Desk) noLiveRun(k store.SessionKey) error {
	ar, ok := d.apps.Lookup(k.App)
	if !ok {
		return nil
	}
	if l, ok := ar.(sessionRunLive); ok && l.SessionRunLive(k.User, k.Session) {
		return status.Errorf(codes.FailedPrecondition, "session %s has a run in progress here: rewind it once the run ends", k)
	}
	return nil
}

// rewindTries bounds the plans a rewind makes when the session moves
// under it (a client's AppendEvent between the plan and the write).
const rewindTries = 3

// RewindSession appends the event that takes a session back to before an
// invocation (store.PlanRewind), refused while a run of it is active.
func (d *Desk) RewindSession(ctx context.Context, req *servicev1.RewindSessionRequest) (*servicev1.RewindSessionResponse, error) {
	k, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	if err := checkID("before_invocation_id", req.GetBeforeInvocationId()); err != nil {
		return nil, err
	}
	f, err := d.forker()
	if err != nil {
		return nil, err
	}
	if err := d.noLiveRun(k); err != nil {
		return nil, err
	}
	newID := func() string { return "rewind-" + rand.Text() }
	for try := 1; ; try++ {
		plan, err := store.PlanRewind(ctx, d.store, k, req.GetBeforeInvocationId(), newID)
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		ev, err := f.AppendRewind(ctx, k, plan)
		if errors.Is(err, store.ErrSessionMoved) && try < rewindTries {
			continue
		}
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		sess, _, err := d.store.GetSession(ctx, k, store.GetOptions{AfterSequence: ev.GetSequence()})
		if err != nil {
			return nil, d.toStatus(ctx, err)
		}
		return &servicev1.RewindSessionResponse{Event: ev, Session: sess}, nil
	}
}
