package front

import (
	"cmp"
	"context"
	"crypto/rand"
	"runtime/debug"

	"fmt"
	"iter"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/eval"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
)

// EvalStore is the storage of evaluation results; both stores implement
// it (store.EvalRunStore), and the desk finds it on its Store, so that a
// store without it answers Unimplemented rather than needing wiring.
type EvalStore = store.EvalRunStore

// ModelLookup returns a model of the apps file by name (the judge of a
// rubric-based criterion).
type ModelLookup func(ctx context.Context, name string) (model.Model, error)

// Bounds of RunEvalRequest.
const (
	defaultEvalRepeats  = 1
	maxEvalRepeats      = 20
	defaultEvalParallel = 4
	maxEvalParallel     = 64
	maxEvalListLimit    = 500
)

func (d *Desk) evalStore() (EvalStore, error) {
	es, ok := d.store.(EvalStore)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this store keeps no evaluation results")
	}
	return es, nil
}

// evalPlan is a RunEvalRequest, read and checked.
type evalPlan struct {
	app, user, label string
	evalRunID        string
	set              *eval.EvalSet
	criteria         []eval.Criterion
	repeats          int
	parallel         int
}

func validateRunEval(r *servicev1.RunEvalRequest) (*evalPlan, error) {
	if err := checkID("app_name", r.GetAppName()); err != nil {
		return nil, err
	}
	if err := checkID("user_id", r.GetUserId()); err != nil {
		return nil, err
	}
	if err := checkText("label", r.GetLabel(), false, maxFilenameBytes); err != nil {
		return nil, err
	}
	if len(r.GetEvalSet()) == 0 {
		return nil, invalid("eval_set", "required")
	}
	name := r.GetEvalSetName()
	if name == "" {
		name = "eval_set"
	}
	set, err := eval.Load(name, r.GetEvalSet())
	if err != nil {
		return nil, invalid("eval_set", "%v", err)
	}
	criteria := eval.DefaultCriteria()
	if len(r.GetConfig()) > 0 {
		if criteria, err = eval.LoadConfig(r.GetConfig()); err != nil {
			return nil, invalid("config", "%v", err)
		}
	}
	p := &evalPlan{app: r.GetAppName(), user: r.GetUserId(), label: r.GetLabel(), set: set, criteria: criteria,
		repeats: int(r.GetRepeats()), parallel: int(r.GetParallelism())}
	switch {
	case p.repeats < 0 || p.repeats > maxEvalRepeats:
		return nil, invalid("repeats", "%d is not between 0 and %d", p.repeats, maxEvalRepeats)
	case p.parallel < 0 || p.parallel > maxEvalParallel:
		return nil, invalid("parallelism", "%d is not between 0 and %d", p.parallel, maxEvalParallel)
	}
	p.repeats = cmp.Or(p.repeats, defaultEvalRepeats)
	p.parallel = cmp.Or(p.parallel, defaultEvalParallel)
	return p, nil
}

// RunEval runs every case of an eval set, repeats times each, as runs of
// the caller's user, scores them and stores the result. Each repeat of a
// case is a fresh session holding the case's initial state; its user
// messages go through Run one after the other, so that admission, limits
// and budgets apply to each as to any run. At most parallelism repeats run
// at once.
func (d *Desk) RunEval(ctx context.Context, req *servicev1.RunEvalRequest) (*servicev1.RunEvalResponse, error) {
	p, err := validateRunEval(req)
	if err != nil {
		return nil, err
	}
	es, err := d.evalStore()
	if err != nil {
		return nil, err
	}
	if _, ok := d.apps.Lookup(p.app); !ok {
		return nil, unknownApp(p.app)
	}
	judge, err := d.judgeFor(ctx, p.criteria)
	if err != nil {
		return nil, err
	}
	p.evalRunID = rand.Text()
	rec := &agentrunnerv1.EvalRun{
		EvalRunId: p.evalRunID, AppName: p.app, UserId: p.user, EvalSetId: p.set.EvalSetID,
		CreateTime: timestamppb.Now(), Repeats: int32(p.repeats), Label: p.label, Criteria: criteriaProto(p.criteria),
	}
	actual := d.runEvalCases(ctx, p)
	if err := ctx.Err(); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	rec.Passed = true
	for i, c := range p.set.EvalCases {
		cr := scoreEvalCase(ctx, c, actual[i], p.criteria, judge)
		rec.Cases = append(rec.Cases, cr)
		rec.Passed = rec.Passed && cr.GetPassed()
	}
	rec.EndTime = timestamppb.Now()
	if err := es.CreateEvalRun(ctx, rec); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.RunEvalResponse{EvalRun: rec}, nil
}

// judgeFor checks, before any case runs, that every judge model the
// criteria name can be had, and returns the judge (nil when no criterion
// needs one).
func (d *Desk) judgeFor(ctx context.Context, criteria []eval.Criterion) (eval.Judge, error) {
	var judge eval.Judge
	for _, c := range criteria {
		if c.Metric != eval.MetricRubricResponse {
			continue
		}
		if d.judges == nil {
			return nil, invalid("config", "%s: this server has no judge models", c.Metric)
		}
		if _, err := d.judges(ctx, c.JudgeModel); err != nil {
			return nil, invalid("config", "%s: judge_model %q: %v", c.Metric, c.JudgeModel, err)
		}
		judge = eval.ModelJudge{Model: d.judges}
	}
	return judge, nil
}

// caseRepeat is what one repeat of one case did.
type caseRepeat struct {
	proto  *agentrunnerv1.EvalCaseRepeat
	actual []eval.Invocation
}

// runEvalCases runs every (case, repeat) pair, at most p.parallel at once,
// and returns the repeats of each case in order.
func (d *Desk) runEvalCases(ctx context.Context, p *evalPlan) [][]caseRepeat {
	out := make([][]caseRepeat, len(p.set.EvalCases))
	for i := range out {
		out[i] = make([]caseRepeat, p.repeats)
	}
	sem := make(chan struct{}, p.parallel)
	var wg sync.WaitGroup
	for i, c := range p.set.EvalCases {
		for r := range p.repeats {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				sid := fmt.Sprintf("eval-%s-%d-%d", p.evalRunID, i, r)
				// A goroutine of its own: a panic in scoring (a case
				// no check foresaw) fails this repeat, not the server.
				defer func() {
					if v := recover(); v != nil {
						d.log.Error("eval repeat panicked", "session", sid, "panic", v, "stack", string(debug.Stack()))
						out[i][r] = caseRepeat{proto: &agentrunnerv1.EvalCaseRepeat{SessionId: sid, Error: fmt.Sprintf("internal error: %v", v)}}
					}
				}()
				out[i][r] = d.runEvalRepeat(ctx, p, c, sid)
			})
		}
	}
	wg.Wait()
	return out
}

// runEvalRepeat plays one case's conversation in a new session, turn by
// turn, and stops at the first turn whose run does not succeed.
func (d *Desk) runEvalRepeat(ctx context.Context, p *evalPlan, c eval.EvalCase, sid string) caseRepeat {
	rep := caseRepeat{proto: &agentrunnerv1.EvalCaseRepeat{SessionId: sid}}
	var state *structpb.Struct
	if c.SessionInput != nil && len(c.SessionInput.State) > 0 {
		st, err := structpb.NewStruct(c.SessionInput.State)
		if err != nil {
			rep.proto.Error = "session_input.state: " + err.Error()
			return rep
		}
		state = st
	}
	if _, err := d.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: p.app, UserId: p.user, SessionId: sid, State: state}); err != nil {
		rep.proto.Error = "create session: " + err.Error()
		return rep
	}
	for i, inv := range c.Conversation {
		got, runID, err := d.runEvalTurn(ctx, p, sid, inv.UserContent)
		rep.actual = append(rep.actual, got)
		rep.proto.Invocations = append(rep.proto.Invocations, invocationProto(runID, inv, got))
		if err != nil {
			rep.proto.Error = fmt.Sprintf("turn %d: %v", i+1, err)
			return rep
		}
	}
	return rep
}

// runEvalTurn sends one user message and collects what the run did.
func (d *Desk) runEvalTurn(ctx context.Context, p *evalPlan, sid string, user *eval.Content) (eval.Invocation, string, error) {
	msg := &agentrunnerv1.Content{Role: "user"}
	for _, part := range user.Parts {
		if part.Text != "" {
			msg.Parts = append(msg.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: part.Text}})
		}
	}
	updates, err := d.runForEval(ctx, &servicev1.RunRequest{AppName: p.app, UserId: p.user, SessionId: sid, NewMessage: msg}, p.evalRunID)
	if err != nil {
		return eval.Invocation{UserContent: user}, "", err
	}
	var events []*agentrunnerv1.Event
	var run *agentrunnerv1.Run
	var runErr error
	for u, err := range updates {
		if err != nil {
			runErr = err
			break
		}
		if u.Run != nil {
			run = u.Run
		}
		if u.Event != nil {
			events = append(events, u.Event)
		}
		if u.Err != nil && runErr == nil {
			runErr = u.Err
		}
	}
	got := eval.ActualInvocation(user, events)
	switch st := run.GetStatus(); {
	case runErr != nil && st != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
		return got, run.GetRunId(), runErr
	case st != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
		return got, run.GetRunId(), fmt.Errorf("run %s ended %s", run.GetRunId(), st)
	}
	return got, run.GetRunId(), nil
}

// runForEval is Run for a turn of an evaluation: the same admission, and
// the run's record names the evaluation.
func (d *Desk) runForEval(ctx context.Context, req *servicev1.RunRequest, evalRunID string) (iter.Seq2[runner.Update, error], error) {
	app, slot, rr, err := d.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	rr.EvalRunID = evalRunID
	return d.runs.tracked(slot, app.RunDone, app.Stream(ctx, rr)), nil
}

// scoreEvalCase scores a case's repeats; a repeat that did not run to the
// end fails the case whatever its scores.
func scoreEvalCase(ctx context.Context, c eval.EvalCase, reps []caseRepeat, criteria []eval.Criterion, judge eval.Judge) *agentrunnerv1.EvalCaseResult {
	cr := &agentrunnerv1.EvalCaseResult{EvalId: c.EvalID, Passed: true}
	actual := make([][]eval.Invocation, len(reps))
	for i, r := range reps {
		actual[i] = r.actual
		cr.Repeats = append(cr.Repeats, r.proto)
		if r.proto.GetError() != "" {
			cr.Passed = false
		}
	}
	for _, m := range eval.ScoreCase(ctx, c, actual, criteria, judge) {
		cr.Metrics = append(cr.Metrics, &agentrunnerv1.EvalMetricResult{
			Metric: m.Metric, Threshold: m.Threshold, Score: m.Score, Passed: m.Passed, Error: m.Error,
		})
		cr.Passed = cr.Passed && m.Passed
		for r, scores := range m.PerInvocation {
			for i, s := range scores {
				cr.Repeats[r].Invocations[i].Scores[m.Metric] = s
			}
		}
	}
	return cr
}

func invocationProto(runID string, expected, actual eval.Invocation) *agentrunnerv1.EvalInvocation {
	return &agentrunnerv1.EvalInvocation{
		RunId: runID, UserText: expected.UserContent.Text(),
		ExpectedResponse: expected.FinalResponse.Text(), ActualResponse: actual.FinalResponse.Text(),
		ExpectedToolUses: callsProto(expected.IntermediateData.ToolCalls()),
		ActualToolUses:   callsProto(actual.IntermediateData.ToolCalls()),
		Scores:           map[string]float64{},
	}
}

func callsProto(calls []eval.FunctionCall) []*agentrunnerv1.FunctionCall {
	out := make([]*agentrunnerv1.FunctionCall, 0, len(calls))
	for _, c := range calls {
		args, err := structpb.NewStruct(c.PlainArgs())
		if err != nil {
			args = nil
		}
		out = append(out, &agentrunnerv1.FunctionCall{Name: c.Name, Args: args})
	}
	return out
}

func criteriaProto(cs []eval.Criterion) []*agentrunnerv1.EvalCriterion {
	out := make([]*agentrunnerv1.EvalCriterion, 0, len(cs))
	for _, c := range cs {
		pc := &agentrunnerv1.EvalCriterion{Metric: c.Metric, Threshold: c.Threshold, IgnoreArgs: c.IgnoreArgs, JudgeModel: c.JudgeModel}
		if c.Metric == eval.MetricToolTrajectory {
			pc.MatchType = string(c.MatchType)
		}
		for _, r := range c.Rubrics {
			pc.Rubrics = append(pc.Rubrics, r.ID+": "+r.Text)
		}
		out = append(out, pc)
	}
	return out
}

// GetEvalRun returns a stored evaluation of the caller's user.
func (d *Desk) GetEvalRun(ctx context.Context, req *servicev1.GetEvalRunRequest) (*servicev1.GetEvalRunResponse, error) {
	for _, f := range [][2]string{{"app_name", req.GetAppName()}, {"user_id", req.GetUserId()}, {"eval_run_id", req.GetEvalRunId()}} {
		if err := checkID(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	es, err := d.evalStore()
	if err != nil {
		return nil, err
	}
	r, err := es.GetEvalRun(ctx, req.GetAppName(), req.GetUserId(), req.GetEvalRunId())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.GetEvalRunResponse{EvalRun: r}, nil
}

// ListEvalRuns lists an app's evaluations newest first, without the
// repeats' turns.
func (d *Desk) ListEvalRuns(ctx context.Context, req *servicev1.ListEvalRunsRequest) (*servicev1.ListEvalRunsResponse, error) {
	if err := checkID("app_name", req.GetAppName()); err != nil {
		return nil, err
	}
	if err := checkOptionalID("user_id", req.GetUserId()); err != nil {
		return nil, err
	}
	if n := req.GetLimit(); n < 0 || n > maxEvalListLimit {
		return nil, invalid("limit", "%d is not between 0 and %d", n, maxEvalListLimit)
	}
	es, err := d.evalStore()
	if err != nil {
		return nil, err
	}
	runs, err := es.ListEvalRuns(ctx, req.GetAppName(), req.GetUserId(), int(req.GetLimit()))
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	for _, r := range runs {
		for _, c := range r.GetCases() {
			for _, rep := range c.GetRepeats() {
				rep.Invocations = nil
			}
		}
	}
	return &servicev1.ListEvalRunsResponse{EvalRuns: runs}, nil
}
