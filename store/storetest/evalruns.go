package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// OpenEvalRuns returns a new, empty store of evaluation results; the
// test closes it (t.Cleanup) as Open's stores are.
type OpenEvalRuns func(t *testing.T) store.EvalRunStore

// RunEvalRuns is the contract of store.EvalRunStore: a record reads back
// as written, is written once, is found only under its app and user, and
// lists newest first, by user or for every user, up to a limit; bad
// records are refused and leave nothing behind.
func RunEvalRuns(t *testing.T, open OpenEvalRuns) {
	ctx := context.Background()
	s := open(t)
	base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	rec := func(app, user, id string, minute int) *agentrunnerv1.EvalRun {
		return &agentrunnerv1.EvalRun{
			EvalRunId: id, AppName: app, UserId: user, EvalSetId: "set", Repeats: 2, Passed: minute%2 == 0,
			CreateTime: timestamppb.New(base.Add(time.Duration(minute) * time.Minute)),
			Cases: []*agentrunnerv1.EvalCaseResult{{EvalId: "c1", Metrics: []*agentrunnerv1.EvalMetricResult{{Metric: "response_match_score", Score: 0.5, Threshold: 0.8}},
				Repeats: []*agentrunnerv1.EvalCaseRepeat{{SessionId: "s-" + id, Invocations: []*agentrunnerv1.EvalInvocation{{UserText: "hi", ActualResponse: "hello", Scores: map[string]float64{"response_match_score": 0.5}}}}}}},
		}
	}
	want := map[string]*agentrunnerv1.EvalRun{}
	for i, k := range []struct{ app, user, id string }{
		{"a", "u1", "e1"}, {"a", "u1", "e2"}, {"a", "u2", "e3"}, {"b", "u1", "e4"}, {"a", "u1", "e5"},
	} {
		r := rec(k.app, k.user, k.id, i)
		if err := s.CreateEvalRun(ctx, r); err != nil {
			t.Fatalf("CreateEvalRun(%s): %v", k.id, err)
		}
		want[k.id] = r
	}
	if err := s.CreateEvalRun(ctx, rec("a", "u1", "e1", 9)); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("second CreateEvalRun(e1) = %v, want ErrAlreadyExists", err)
	}
	got, err := s.GetEvalRun(ctx, "a", "u1", "e1")
	if err != nil || !proto.Equal(got, want["e1"]) {
		t.Errorf("GetEvalRun(e1) = %v, %v; want it as first written", got, err)
	}
	for _, k := range [][3]string{{"a", "u2", "e1"}, {"b", "u1", "e1"}, {"a", "u1", "nope"}} {
		if _, err := s.GetEvalRun(ctx, k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetEvalRun(%v) = %v, want ErrNotFound", k, err)
		}
	}
	lists := []struct {
		app, user string
		limit     int
		want      string
	}{
		{"a", "u1", 0, "e5 e2 e1"}, {"a", "", 0, "e5 e3 e2 e1"}, {"a", "", 2, "e5 e3"}, {"b", "", 0, "e4"}, {"c", "", 0, ""},
	}
	for _, l := range lists {
		runs, err := s.ListEvalRuns(ctx, l.app, l.user, l.limit)
		if err != nil {
			t.Fatalf("ListEvalRuns(%s, %s): %v", l.app, l.user, err)
		}
		ids := make([]string, len(runs))
		for i, r := range runs {
			ids[i] = r.GetEvalRunId()
			if !proto.Equal(r, want[r.GetEvalRunId()]) {
				t.Errorf("ListEvalRuns returned %s changed", r.GetEvalRunId())
			}
		}
		if got := strings.Join(ids, " "); got != l.want {
			t.Errorf("ListEvalRuns(%q, %q, %d) = %q, want %q", l.app, l.user, l.limit, got, l.want)
		}
	}
	checkEvalRunRefusals(t, s, rec)
}

func checkEvalRunRefusals(t *testing.T, s store.EvalRunStore, rec func(app, user, id string, minute int) *agentrunnerv1.EvalRun) {
	ctx := context.Background()
	noTime := rec("a", "u1", "bad1", 0)
	noTime.CreateTime = nil
	for i, bad := range []*agentrunnerv1.EvalRun{nil, rec("a", "u1", "", 0), rec("", "u1", "bad2", 0), rec("a", "", "bad3", 0), noTime} {
		if err := s.CreateEvalRun(ctx, bad); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("CreateEvalRun(bad %d) = %v, want ErrInvalidArgument", i, err)
		}
	}
	runs, err := s.ListEvalRuns(ctx, "a", "u1", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if strings.HasPrefix(r.GetEvalRunId(), "bad") {
			t.Errorf("refused record %s was stored", r.GetEvalRunId())
		}
	}
	if _, err := s.ListEvalRuns(ctx, "", "u1", 0); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("ListEvalRuns without an app = %v, want ErrInvalidArgument", err)
	}
	if _, err := s.GetEvalRun(ctx, "a", "u1", ""); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("GetEvalRun without an id = %v, want ErrInvalidArgument", err)
	}
}
