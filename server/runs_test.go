package server

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/grpc/codes"
)

// gate is an app whose agent says "started <message>", then waits until
// the test opens its gate (or its context ends), then says "done
// <message>". Every message's run reports on entered when it waits.
type gateApp struct {
	entered chan string
	mu      sync.Mutex
	open    map[string]chan struct{}
	stopped chan error
}

func newGate() *gateApp {
	return &gateApp{entered: make(chan string, 64), open: map[string]chan struct{}{}, stopped: make(chan error, 64)}
}

// ch returns the gate of a message.
func (g *gateApp) ch(msg string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.open[msg]
	if !ok {
		c = make(chan struct{})
		g.open[msg] = c
	}
	return c
}

func (g *gateApp) release(msg string) { close(g.ch(msg)) }

func (g *gateApp) app(t *testing.T) apps.App {
	testCtx := t.Context()
	return customApp("gate", func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			msg := ctx.UserContent().GetParts()[0].GetText()
			if !yield(say("started "+msg), nil) {
				return
			}
			g.entered <- msg
			select {
			case <-g.ch(msg):
			case <-ctx.Done(): // a model call that ends only when cancelled
				g.stopped <- ctx.Err()
				yield(nil, ctx.Err())
				return
			case <-testCtx.Done():
				return
			}
			done := "done " + msg
			if n := ctx.RunConfig().GetMaxLlmCalls(); n != 0 {
				done += fmt.Sprintf(" (max_llm_calls %d)", n)
			}
			yield(say(done), nil)
		}
	})(t)
}

// startRun starts a run in the background through StartRun.
func (e *env) startRun(t *testing.T, session, msg string, strategy agentrunnerv1.MultitaskStrategy) *agentrunnerv1.Run {
	t.Helper()
	resp, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "gate", UserId: "u1", SessionId: session, NewMessage: text(msg), MultitaskStrategy: strategy})
	if err != nil {
		t.Fatalf("StartRun(%s): %v", msg, err)
	}
	return resp.GetRun()
}

// attach follows a run to its end through AttachRun.
func (e *env) attach(t *testing.T, runID string, after uint64) runResult {
	t.Helper()
	stream, err := e.runner.AttachRun(t.Context(), &servicev1.AttachRunRequest{RunId: runID, AfterSequence: after})
	if err != nil {
		t.Fatal(err)
	}
	resps, err := collectRun(t, stream)
	return toResult(resps, err)
}

// toResult sorts a run stream's responses like env.run does.
func toResult(resps []*servicev1.RunResponse, err error) runResult {
	res := runResult{status: err}
	for _, r := range resps {
		switch {
		case r.GetRun() != nil:
			res.runs = append(res.runs, r.GetRun())
		case r.GetError() != nil:
			res.errors = append(res.errors, r.GetError())
			res.kinds = append(res.kinds, "error")
		default:
			ev := r.GetEvent()
			res.events = append(res.events, ev)
			if parts := ev.GetContent().GetParts(); len(parts) > 0 {
				res.kinds = append(res.kinds, ev.GetAuthor()+": "+parts[0].GetText())
			} else {
				res.kinds = append(res.kinds, ev.GetAuthor()+": !"+ev.GetErrorCode())
			}
		}
	}
	return res
}

// waitEntered waits until the run of msg waits at its gate.
func (g *gateApp) waitEntered(t *testing.T, msg string) {
	t.Helper()
	waitFor(t, g.entered, msg)
}

func (r runResult) final(t *testing.T) *agentrunnerv1.Run {
	t.Helper()
	if len(r.runs) < 2 {
		t.Fatalf("stream carried %d run records, want the first and the last (status %v)", len(r.runs), r.status)
	}
	return r.runs[len(r.runs)-1]
}

func getRun(t *testing.T, e *env, id string) *agentrunnerv1.Run {
	t.Helper()
	resp, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return resp.GetRun()
}

// TestRunRecords: a run stream starts and ends with the run record, the
// record's sequence range is exactly the run's events, and GetRun and
// ListRuns (newest first, paged) agree with it.
func TestRunRecords(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")
	var ids []string
	for _, msg := range []string{"one", "two", "three"} {
		g.release(msg)
		res := e.run(t, t.Context(), &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text(msg),
			RunConfig: &agentrunnerv1.RunConfig{StreamUserEvent: true}})
		if res.status != nil {
			t.Fatal(res.status)
		}
		first, last := res.runs[0], res.final(t)
		if len(res.runs) != 2 || first.GetRunId() != last.GetRunId() || first.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
			t.Fatalf("records %v, want RUNNING first and the same run last", res.runs)
		}
		if last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || last.GetEndTime() == nil || last.GetStartTime() == nil {
			t.Errorf("final record %v, want SUCCEEDED with start and end times", last)
		}
		if got := []string{res.kinds[0], res.kinds[len(res.kinds)-1]}; got[0] != "user: "+msg || got[1] != "gate_agent: done "+msg {
			t.Errorf("events %q", res.kinds)
		}
		for _, ev := range res.events {
			if ev.GetInvocationId() != last.GetRunId() {
				t.Errorf("event %d has invocation %s, want the run id %s", ev.GetSequence(), ev.GetInvocationId(), last.GetRunId())
			}
		}
		if last.GetFirstSequence() != res.events[0].GetSequence() || last.GetLastSequence() != res.events[len(res.events)-1].GetSequence() {
			t.Errorf("record range [%d, %d], events %d..%d", last.GetFirstSequence(), last.GetLastSequence(), res.events[0].GetSequence(), res.events[len(res.events)-1].GetSequence())
		}
		if got := getRun(t, e, last.GetRunId()); got.GetStatus() != last.GetStatus() || got.GetLastSequence() != last.GetLastSequence() {
			t.Errorf("GetRun = %v, want %v", got, last)
		}
		ids = append(ids, last.GetRunId())
	}
	// Newest first, two to a page.
	var listed []string
	token := ""
	for range 3 {
		resp, err := e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "gate", UserId: "u1", SessionId: "s1", PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetRuns() {
			listed = append(listed, r.GetRunId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	slices.Reverse(ids)
	if !slices.Equal(listed, ids) {
		t.Errorf("ListRuns = %q, want newest first %q", listed, ids)
	}
	_, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: "e-nope"})
	wantCode(t, err, codes.NotFound, "")
	_, err = e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{})
	wantCode(t, err, codes.InvalidArgument, "run_id")
	_, err = e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "gate", UserId: "u1", SessionId: "nope"})
	wantCode(t, err, codes.NotFound, "")
}

// TestMultitaskStrategies: reject (the default) refuses a second run
// naming the active one; enqueue runs them after it, in order; interrupt
// cancels the active run, which stores an event saying so, then runs.
func TestMultitaskStrategies(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")

	a := e.startRun(t, "s1", "a", 0)
	g.waitEntered(t, "a")
	res := e.run(t, t.Context(), &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("no")})
	wantCode(t, res.status, codes.Aborted, "")
	if !strings.Contains(statusMessage(res.status), a.GetRunId()) {
		t.Errorf("Aborted %q does not name the active run %s", statusMessage(res.status), a.GetRunId())
	}

	enqueue := agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	b := e.startRun(t, "s1", "b", enqueue)
	c := e.startRun(t, "s1", "c", enqueue)
	for _, r := range []*agentrunnerv1.Run{b, c} {
		if r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
			t.Fatalf("enqueued run is %v, want PENDING", r.GetStatus())
		}
	}
	// A queued session refuses a rejecting run too.
	res = e.run(t, t.Context(), &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("no")})
	wantCode(t, res.status, codes.Aborted, "")

	g.release("a")
	g.waitEntered(t, "b") // b runs after a, and c waits behind b
	if got := getRun(t, e, c.GetRunId()).GetStatus(); got != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Errorf("c is %v while b runs, want PENDING", got)
	}
	g.release("b")
	g.release("c")
	g.waitEntered(t, "c")
	for _, id := range []string{b.GetRunId(), c.GetRunId()} {
		if got := e.attach(t, id, 0).final(t); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Errorf("run %s ended %v", id, got.GetStatus())
		}
	}
	if rb, rc := getRun(t, e, b.GetRunId()), getRun(t, e, c.GetRunId()); rb.GetLastSequence() >= rc.GetFirstSequence() {
		t.Errorf("b [%d,%d] and c [%d,%d] overlap or are out of order", rb.GetFirstSequence(), rb.GetLastSequence(), rc.GetFirstSequence(), rc.GetLastSequence())
	}

	// Interrupt.
	d := e.startRun(t, "s1", "d", 0)
	g.waitEntered(t, "d")
	g.release("x")
	res = e.run(t, t.Context(), &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("x"),
		MultitaskStrategy: agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT})
	if res.status != nil || res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("interrupting run: %v, %v", res.status, res.runs)
	}
	dr := e.attach(t, d.GetRunId(), 0)
	if got := dr.final(t); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || !strings.Contains(got.GetError().GetMessage(), res.runs[0].GetRunId()) {
		t.Errorf("interrupted run ended %v (%q), want CANCELLED naming %s", got.GetStatus(), got.GetError().GetMessage(), res.runs[0].GetRunId())
	}
	last := dr.events[len(dr.events)-1]
	if last.GetErrorCode() != "CANCELLED" || last.GetAuthor() != "gate_agent" {
		t.Errorf("interrupted run's last event %v, want a stored CANCELLED event", last)
	}
	if res.events[0].GetSequence() <= last.GetSequence() {
		t.Errorf("the interrupting run started at %d, before the interrupted one ended at %d", res.events[0].GetSequence(), last.GetSequence())
	}
}

// TestOnDisconnect: a run whose caller goes away is cancelled by default,
// and goes on alone with ON_DISCONNECT_CONTINUE.
func TestOnDisconnect(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")
	for _, tc := range []struct {
		msg    string
		policy agentrunnerv1.OnDisconnect
		want   agentrunnerv1.RunStatus
	}{
		{"cancel", 0, agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED},
		{"continue", agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		stream, err := e.runner.Run(ctx, &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text(tc.msg), OnDisconnect: tc.policy})
		if err != nil {
			t.Fatal(err)
		}
		first, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		g.waitEntered(t, tc.msg)
		cancel()
		id := first.GetRun().GetRunId()
		if tc.want == agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
			if err := <-g.stopped; !errors.Is(err, context.Canceled) {
				t.Errorf("agent stopped with %v", err)
			}
		} else {
			g.release(tc.msg)
		}
		res := e.attach(t, id, 0)
		if got := res.final(t); got.GetStatus() != tc.want {
			t.Errorf("%s: run ended %v, want %v", tc.msg, got.GetStatus(), tc.want)
		}
	}
}

// TestCancelRun: CancelRun stops a run in the middle of its agent's
// work, the run stores an event saying so and ends CANCELLED, and the
// session takes the next run at once.
func TestCancelRun(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")
	r := e.startRun(t, "s1", "long", 0)
	g.waitEntered(t, "long")
	resp, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: r.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetRun(); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || got.GetError().GetCode() != int32(codes.Canceled) {
		t.Fatalf("CancelRun = %v, want CANCELLED", got)
	}
	if err := <-g.stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("agent stopped with %v", err)
	}
	// The next run is admitted at once: no Aborted, no wait.
	g.release("next")
	res := e.run(t, t.Context(), runReqIn("gate", "s1", "next"))
	if res.status != nil {
		t.Fatalf("run after cancel: %v", res.status)
	}
	g.waitEntered(t, "next")
	ev := e.attach(t, r.GetRunId(), 0).events
	if last := ev[len(ev)-1]; last.GetErrorCode() != "CANCELLED" {
		t.Errorf("last event of the cancelled run: %v", last)
	}
	// Cancelling an ended run returns it as it is.
	again, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: r.GetRunId()})
	if err != nil || again.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Errorf("second CancelRun = %v, %v", again.GetRun(), err)
	}
	// A pending run leaves the queue.
	blocker := e.startRun(t, "s1", "blocker", 0)
	g.waitEntered(t, "blocker")
	queued := e.startRun(t, "s1", "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	resp, err = e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: queued.GetRunId()})
	if err != nil || resp.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("cancel a pending run: %v, %v", resp.GetRun(), err)
	}
	g.release("blocker")
	g.release("queued")
	e.attach(t, blocker.GetRunId(), 0)
	if got := getRun(t, e, queued.GetRunId()); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || got.GetFirstSequence() != 0 {
		t.Errorf("cancelled pending run = %v, want CANCELLED without events", got)
	}
	_, err = e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: "e-none"})
	wantCode(t, err, codes.NotFound, "")
}

func runReqIn(app, session, msg string) *servicev1.RunRequest {
	return &servicev1.RunRequest{AppName: app, UserId: "u1", SessionId: session, NewMessage: text(msg)}
}

// TestAttachRun: attachers during and after a run get every stored event
// of the run exactly once, in order, and after_sequence skips the ones a
// reader has.
func TestAttachRun(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")
	g.release("warm-up")
	e.run(t, t.Context(), runReqIn("gate", "s1", "warm-up"))
	g.waitEntered(t, "warm-up")

	r := e.startRun(t, "s1", "follow", 0)
	g.waitEntered(t, "follow")
	const attachers = 4
	results := make(chan runResult, attachers)
	for range attachers {
		go func() {
			stream, err := e.runner.AttachRun(t.Context(), &servicev1.AttachRunRequest{RunId: r.GetRunId()})
			if err != nil {
				results <- runResult{status: err}
				return
			}
			resps, err := collectRun(t, stream)
			results <- toResult(resps, err)
		}()
	}
	g.release("follow")
	after := e.attach(t, r.GetRunId(), 0)
	want := []string{"user: follow", "gate_agent: started follow", "gate_agent: done follow"}
	if !slices.Equal(after.kinds, want) || after.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("attach after the run: %q %v, want %q", after.kinds, after.runs, want)
	}
	for range attachers {
		res := <-results
		if res.status != nil || !slices.Equal(res.kinds, want) {
			t.Errorf("attach during the run: %q (%v), want %q", res.kinds, res.status, want)
		}
	}
	skip := e.attach(t, r.GetRunId(), after.events[1].GetSequence())
	if !slices.Equal(skip.kinds, want[2:]) {
		t.Errorf("attach after_sequence %d: %q, want %q", after.events[1].GetSequence(), skip.kinds, want[2:])
	}
	stream, err := e.runner.AttachRun(t.Context(), &servicev1.AttachRunRequest{RunId: "e-missing"})
	if err == nil {
		_, err = stream.Recv()
	}
	wantCode(t, err, codes.NotFound, "")
}

// TestRunRequestID: a repeated request_id with the same payload gets the
// same run (Run attaches, StartRun returns it) and runs nothing again; a
// different payload is AlreadyExists naming the run.
func TestRunRequestID(t *testing.T) {
	g := newGate()
	e := newEnv(t, withRunnerApps(t, g.app))
	e.createSession(t, "gate", "u1", "s1")
	req := &servicev1.StartRunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("once"), RequestId: "req-1"}
	first, err := e.runner.StartRun(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, "once")
	again, err := e.runner.StartRun(t.Context(), req)
	if err != nil || again.GetRun().GetRunId() != first.GetRun().GetRunId() {
		t.Fatalf("repeated StartRun = %v, %v; want run %s", again.GetRun(), err, first.GetRun().GetRunId())
	}
	g.release("once")
	res := e.run(t, t.Context(), &servicev1.RunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("once"), RequestId: "req-1"})
	if res.status != nil || res.final(t).GetRunId() != first.GetRun().GetRunId() {
		t.Fatalf("repeated Run: %v, %v", res.status, res.runs)
	}
	if n := strings.Count(strings.Join(res.kinds, "\n"), "started once"); n != 1 {
		t.Errorf("the agent started %d times, want once: %q", n, res.kinds)
	}
	_, err = e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("other"), RequestId: "req-1"})
	wantCode(t, err, codes.AlreadyExists, "")
	if !strings.Contains(statusMessage(err), first.GetRun().GetRunId()) {
		t.Errorf("AlreadyExists %q does not name run %s", statusMessage(err), first.GetRun().GetRunId())
	}
	list, err := e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "gate", UserId: "u1", SessionId: "s1"})
	if err != nil || len(list.GetRuns()) != 1 {
		t.Errorf("ListRuns = %d runs (%v), want 1", len(list.GetRuns()), err)
	}
}

// TestRunsSurviveRestart: at a shutdown whose drain time is over, the
// running run is interrupted and the enqueued one stays pending; after a
// restart on the same file the pending run runs, and ResumeRun completes
// the interrupted one.
func TestRunsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	g := newGate()
	e, reg := newEnvAt(t, path, g.app)
	e.createSession(t, "gate", "u1", "s1")
	// Its run config goes with it through the restart into the resumed run.
	started, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "gate", UserId: "u1", SessionId: "s1", NewMessage: text("running"),
		RunConfig: &agentrunnerv1.RunConfig{MaxLlmCalls: 7}})
	if err != nil {
		t.Fatal(err)
	}
	running := started.GetRun()
	g.waitEntered(t, "running")
	queued := e.startRun(t, "s1", "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	expired, cancel := context.WithCancel(t.Context())
	cancel()
	if err := reg.shutdown(expired); err == nil {
		t.Error("Shutdown with no drain time left reported no interrupted run")
	}
	if err := <-g.stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("agent stopped with %v", err)
	}
	e.close(t)

	g.release("queued")
	g.release("running")
	e2, _ := newEnvAt(t, path, g.app)
	if got := e2.attach(t, queued.GetRunId(), 0); got.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("enqueued run after the restart: %v %q", got.runs, got.kinds)
	}
	rec := getRun(t, e2, running.GetRunId())
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("run cut off by the shutdown is %v, want INTERRUPTED", rec.GetStatus())
	}
	stream, err := e2.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: running.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	resps, err := collectRun(t, stream)
	res := toResult(resps, err)
	if res.status != nil || res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("ResumeRun: %v %v %q", res.status, res.runs, res.kinds)
	}
	if res.final(t).GetFirstSequence() != rec.GetFirstSequence() || res.final(t).GetLastSequence() <= rec.GetLastSequence() {
		t.Errorf("resumed record %v does not extend %v", res.final(t), rec)
	}
	if !slices.Contains(res.kinds, "gate_agent: done running (max_llm_calls 7)") {
		t.Errorf("resumed run %q did not keep its run config", res.kinds)
	}
	_, err = collectRun(t, must[servicev1.RunnerService_ResumeRunClient](t)(e2.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: running.GetRunId()})))
	wantCode(t, err, codes.FailedPrecondition, "")
}

// registry is the apps of an env made by newEnvAt.
type registry struct{ reg *apps.Registry }

// shutdown drains every app's runner as serve does at shutdown.
func (h registry) shutdown(ctx context.Context) error {
	var errs []error
	for _, a := range h.reg.List() {
		r, _ := h.reg.Lookup(a.GetName())
		errs = append(errs, r.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// newEnvAt serves the apps on the bbolt file at path, after recovering
// the runs a previous server left there, as serve does.
func newEnvAt(t *testing.T, path string, build ...func(t *testing.T) apps.App) (*env, registry) {
	t.Helper()
	return newEnvAtLimits(t, path, Limits{}, build...)
}

// newEnvAtLimits is newEnvAt with the server's limits l. As serve does,
// every app's runner counts the runs it recovers against them (the
// server's ClaimGate), then recovers.
func newEnvAtLimits(t *testing.T, path string, l Limits, build ...func(t *testing.T) apps.App) (*env, registry) {
	t.Helper()
	return newEnvAtWrapped(t, path, l, nil, build...)
}

// newEnvAtWrapped is newEnvAtLimits whose runners use the store wrap
// returns (the server itself uses the file's store).
func newEnvAtWrapped(t *testing.T, path string, l Limits, wrap func(*boltstore.Store) runner.Store, build ...func(t *testing.T) apps.App) (*env, registry) {
	t.Helper()
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rs runner.Store = st
	if wrap != nil {
		rs = wrap(st)
	}
	reg, err := apps.NewRegistry(apps.Config{Store: rs})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range build {
		if _, err := reg.Register(b(t)); err != nil {
			t.Fatal(err)
		}
	}
	logs := &syncBuffer{}
	cfg := Config{Store: st, Apps: RunnerApps(reg), Logger: slog.New(slog.NewTextHandler(logs, nil)), Limits: l}
	e := startEnv(t, st, cfg, logs)
	for _, a := range reg.List() {
		r, _ := reg.Lookup(a.GetName())
		r.SetClaimGate(e.grpc.srv.ClaimGate())
		if _, _, err := r.Recover(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return e, registry{reg}
}

// TestRecoveredRunsCountAgainstMaxRuns: a queued run that a restart
// starts again holds a slot of --max-runs like one admitted since: with
// the limit at one, another run is ResourceExhausted until it has ended.
func TestRecoveredRunsCountAgainstMaxRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	g := newGate()
	e, reg := newEnvAt(t, path, g.app)
	for _, s := range []string{"s1", "s2"} {
		e.createSession(t, "gate", "u1", s)
	}
	e.startRun(t, "s1", "running", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_REJECT)
	g.waitEntered(t, "running")
	queued := e.startRun(t, "s1", "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	expired, cancel := context.WithCancel(t.Context())
	cancel()
	_ = reg.shutdown(expired) // "running" is cut off: INTERRUPTED
	<-g.stopped
	e.close(t)

	e2, _ := newEnvAtLimits(t, path, Limits{MaxRuns: 1}, g.app)
	g.waitEntered(t, "queued")
	_, err := e2.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "gate", UserId: "u1", SessionId: "s2", NewMessage: text("other")})
	wantCode(t, err, codes.ResourceExhausted, "")
	g.release("queued")
	if got := e2.attach(t, queued.GetRunId(), 0); got.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("recovered run: %v %q", got.runs, got.kinds)
	}
	other := e2.startRun(t, "s2", "other", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_REJECT)
	g.waitEntered(t, "other")
	g.release("other")
	if got := e2.attach(t, other.GetRunId(), 0); got.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("run after the recovered one: %v %q", got.runs, got.kinds)
	}
}
