package server

import (
	"iter"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestForkAndRewind runs ForkSession and RewindSession through the gRPC
// client against the real runner: a run that waits on a client-executed
// tool refuses the rewind; once answered, the rewind restores the state
// and the artifacts as of before a run, a later run starts from there,
// and a fork of the first run's events goes on on its own.
func TestForkAndRewind(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, ordersApp))
	ctx := t.Context()
	e.createSession(t, "orders", "u1", "s1")
	first := e.run(t, ctx, withState(t, runReq("orders", "s1", "hello"), map[string]any{"step": 1}))
	if first.status != nil {
		t.Fatal(first.status)
	}
	firstRun := first.final(t).GetRunId()
	if _, err := e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "orders", UserId: "u1", SessionId: "s1", Filename: "notes.txt", Artifact: text("before").GetParts()[0]}); err != nil {
		t.Fatal(err)
	}
	// The second run sets step 2 and waits on the client's tool.
	second := e.run(t, ctx, withState(t, runReq("orders", "s1", `call get_order {"order_id": "42"}`), map[string]any{"step": 2}))
	w := second.final(t)
	if w.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		t.Fatalf("second run ended %v, want INPUT_REQUIRED", w.GetStatus())
	}
	rewindReq := &servicev1.RewindSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1", BeforeInvocationId: w.GetRunId()}
	_, err := e.sessions.RewindSession(ctx, rewindReq)
	wantCode(t, err, codes.FailedPrecondition, "")
	// Answered, the run ends; the rewind goes through.
	if res := e.run(t, ctx, answerCall(t, w.GetPendingCallIds()[0], map[string]any{"status": "shipped"})); res.status != nil {
		t.Fatal(res.status)
	}
	before := must[*servicev1.GetSessionResponse](t)(e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
	if got := before.GetSession().GetState().AsMap()["step"]; got != 2.0 {
		t.Fatalf("step before the rewind = %v, want 2", got)
	}
	rw := must[*servicev1.RewindSessionResponse](t)(e.sessions.RewindSession(ctx, rewindReq))
	if rw.GetEvent().GetActions().GetRewindBeforeInvocationId() != w.GetRunId() || rw.GetEvent().GetSequence() != before.GetSession().GetLastSequence()+1 {
		t.Fatalf("rewind event = %v", rw.GetEvent())
	}
	if got := rw.GetSession().GetState().AsMap()["step"]; got != 1.0 {
		t.Fatalf("step after the rewind = %v, want 1", got)
	}
	// The run after it starts from the rewound state.
	third := e.run(t, ctx, runReq("orders", "s1", "again"))
	if third.status != nil {
		t.Fatal(third.status)
	}
	after := must[*servicev1.GetSessionResponse](t)(e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
	if got := after.GetSession().GetState().AsMap()["step"]; got != 1.0 {
		t.Fatalf("step after a run that follows the rewind = %v, want 1", got)
	}
	_, err = e.sessions.RewindSession(ctx, &servicev1.RewindSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1", BeforeInvocationId: "e-none"})
	wantCode(t, err, codes.NotFound, "")
	_, err = e.sessions.RewindSession(ctx, &servicev1.RewindSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})
	wantCode(t, err, codes.InvalidArgument, "before_invocation_id")
	checkFork(t, e, before, firstRun)
}

// checkFork forks session s1 of TestForkAndRewind (its events before
// the rewind) after the events of run firstRun and runs in the fork.
func checkFork(t *testing.T, e *env, before *servicev1.GetSessionResponse, firstRun string) {
	ctx := t.Context()
	var upTo uint64
	for _, ev := range before.GetEvents() {
		if ev.GetInvocationId() == firstRun {
			upTo = ev.GetSequence()
		}
	}
	fork := must[*servicev1.ForkSessionResponse](t)(e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1", UpToSequence: upTo, NewSessionId: "f1"}))
	if ff := fork.GetSession().GetForkedFrom(); ff.GetSessionId() != "s1" || ff.GetSequence() != upTo || fork.GetSession().GetLastSequence() != upTo {
		t.Fatalf("fork = %v", fork.GetSession())
	}
	if got := fork.GetSession().GetState().AsMap()["step"]; got != 1.0 {
		t.Fatalf("fork's step = %v, want 1", got)
	}
	// notes.txt was saved without an event after the first run: by its
	// time, not seen by the fork's last event.
	_, err := e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "orders", UserId: "u1", SessionId: "f1", Filename: "notes.txt"})
	wantCode(t, err, codes.NotFound, "")
	if res := e.run(t, ctx, runReq("orders", "f1", "in the fork")); res.status != nil {
		t.Fatal(res.status)
	}
	runs := must[*servicev1.ListRunsResponse](t)(e.runner.ListRuns(ctx, &servicev1.ListRunsRequest{AppName: "orders", UserId: "u1", SessionId: "f1"}))
	if len(runs.GetRuns()) != 1 {
		t.Fatalf("fork's runs = %d, want its own one", len(runs.GetRuns()))
	}
	_, err = e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1", NewSessionId: "f1"})
	wantCode(t, err, codes.AlreadyExists, "")
	_, err = e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1", UpToSequence: 1000})
	wantCode(t, err, codes.InvalidArgument, "")
	_, err = e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: "orders", UserId: "u1", SessionId: "nope"})
	wantCode(t, err, codes.NotFound, "")
}

// withState sets a run request's state delta.
func withState(t *testing.T, req *servicev1.RunRequest, delta map[string]any) *servicev1.RunRequest {
	st, err := structpb.NewStruct(delta)
	if err != nil {
		t.Fatal(err)
	}
	req.StateDelta = st
	return req
}

// TestForkIntoAnotherUserIsForAdmins: an owner forks and rewinds their
// own session; a fork into another user is an admin's.
func TestForkIntoAnotherUserIsForAdmins(t *testing.T) {
	e := newEnv(t, withAuth(t, matrixAuth), withRunnerApps(t, customApp("echo", sayHi)))
	f := e.newFixture(t, "echo", "alice", "s1")
	ctx := as(t.Context(), "alice")
	fork, err := e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: f.app, UserId: "alice", SessionId: f.session, UpToSequence: 1})
	if err != nil || fork.GetSession().GetUserId() != "alice" {
		t.Fatalf("owner's fork = %v, %v", fork, err)
	}
	if _, err := e.sessions.RewindSession(ctx, &servicev1.RewindSessionRequest{AppName: f.app, UserId: "alice", SessionId: f.session, BeforeInvocationId: f.run}); err != nil {
		t.Fatalf("owner's rewind: %v", err)
	}
	_, err = e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: f.app, UserId: "alice", SessionId: f.session, NewUserId: "bob"})
	wantCode(t, err, codes.PermissionDenied, "")
	_, err = e.sessions.ForkSession(as(t.Context(), "bob"), &servicev1.ForkSessionRequest{AppName: f.app, UserId: "alice", SessionId: f.session})
	wantCode(t, err, codes.PermissionDenied, "")
	root, err := e.sessions.ForkSession(as(t.Context(), "root"), &servicev1.ForkSessionRequest{AppName: f.app, UserId: "alice", SessionId: f.session, NewUserId: "bob"})
	if err != nil || root.GetSession().GetUserId() != "bob" {
		t.Fatalf("admin's fork into bob = %v, %v", root, err)
	}
}

// TestRewindRefusedWhileRunInFlight: a run in progress (its agent still
// working) refuses the rewind of its session; once it has ended the
// rewind goes through.
func TestRewindRefusedWhileRunInFlight(t *testing.T) {
	release := make(chan struct{})
	blocking := customApp("block", func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(say("working"), nil) {
				return
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			yield(say("done"), nil)
		}
	})
	e := newEnv(t, withRunnerApps(t, blocking))
	ctx := t.Context()
	e.createSession(t, "block", "u1", "s1")
	stream, err := e.runner.Run(ctx, runReq("block", "s1", "go"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv() // the run's record: it is admitted
	if err != nil || first.GetRun() == nil {
		t.Fatalf("first response = %v, %v; want the run", first, err)
	}
	req := &servicev1.RewindSessionRequest{AppName: "block", UserId: "u1", SessionId: "s1", BeforeInvocationId: first.GetRun().GetRunId()}
	// Until the run's first event is stored, only the runner knows of it;
	// after, its record says RUNNING: refused either way.
	_, err = e.sessions.RewindSession(ctx, req)
	wantCode(t, err, codes.FailedPrecondition, "")
	if _, err := nextEvent(stream); err != nil { // "working", stored
		t.Fatal(err)
	}
	_, err = e.sessions.RewindSession(ctx, req)
	wantCode(t, err, codes.FailedPrecondition, "")
	close(release)
	if _, err := collectRun(t, stream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sessions.RewindSession(ctx, req); err != nil {
		t.Fatalf("rewind once the run ended: %v", err)
	}
}
