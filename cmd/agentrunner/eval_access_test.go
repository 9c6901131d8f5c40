package main

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// A one-case eval set for the demo app's greeter, whatever it answers: the
// access tests look at who may run it, not at its score.
const demoGreeting = `{"eval_set_id": "greet", "eval_cases": [{"eval_id": "hello",
  "conversation": [{"user_content": {"parts": [{"text": "hello there"}]}, "final_response": {"parts": [{"text": "hello"}]}}]}]}`

// TestEvalRespectsAuth: an evaluation is a set of runs of its user, so a
// principal may evaluate only as a user and on an app it is granted, and
// list or read only its own user's evaluations.
func TestEvalRespectsAuth(t *testing.T) {
	addr, dir := secureServer(t)
	set := writeFile(t, filepath.Join(t.TempDir(), "greet.evalset.json"), demoGreeting)
	as := func(token string, args ...string) (string, int) {
		return cli(t, "", append(args, "--addr", addr, "--ca-file", filepath.Join(dir, "ca.pem"), "--token-file", filepath.Join(dir, token))...)
	}
	for _, tc := range []struct{ app, user string }{{"demo", "bob"}, {"support", "alice"}} {
		out, code := as("alice.token", "eval", set, "--app", tc.app, "--user", tc.user)
		if code != 1 || !strings.Contains(out, "PermissionDenied") {
			t.Errorf("eval of %s as %s by alice: exit %d, want 1 and PermissionDenied\n%s", tc.app, tc.user, code, out)
		}
	}
	out, code := as("alice.token", "eval", set, "--app", "demo", "--user", "alice")
	if strings.Contains(out, "PermissionDenied") || !strings.Contains(out, "1 of 1 cases") && !strings.Contains(out, "0 of 1 cases") {
		t.Fatalf("eval of demo as alice: exit %d\n%s", code, out)
	}
	if out, code := as("alice.token", "eval", "list", "--app", "demo", "--user", "alice"); code != 0 || !strings.Contains(out, "greet") {
		t.Errorf("eval list as alice: exit %d\n%s", code, out)
	}
	if out, code := as("alice.token", "eval", "list", "--app", "demo", "--all-users"); code != 1 || !strings.Contains(out, "PermissionDenied") {
		t.Errorf("eval list --all-users as alice: exit %d, want PermissionDenied\n%s", code, out)
	}
	if out, code := as("root.token", "eval", "list", "--app", "demo", "--all-users"); code != 0 || !strings.Contains(out, "alice") {
		t.Errorf("eval list --all-users as root: exit %d\n%s", code, out)
	}
}

// TestEvalRespectsBudgets: the runs of an evaluation count against the
// user's daily budget like any; once it is spent, the next repeat is
// refused and its case fails, naming the budget.
func TestEvalRespectsBudgets(t *testing.T) {
	_, _, addr, stop := costsServerAt(t, filepath.Join(t.TempDir(), "db"), 1)
	defer stop()
	set := writeFile(t, filepath.Join(t.TempDir(), "capped.evalset.json"), strings.ReplaceAll(demoGreeting, "greet", "capped"))
	out, code := cli(t, "", "eval", set, "--app", "capped", "--user", "u1", "--repeats", "3", "--parallel", "1", "--addr", addr)
	if code != 1 || !strings.Contains(out, "--- FAIL hello") || !strings.Contains(out, `repeat 2 (session eval-`) || !strings.Contains(out, `budget user_daily of app "capped" reached`) {
		t.Errorf("eval over budget: exit %d, want 1 with the refusal in the report\n%s", code, out)
	}
}

// TestEvalRefusals: what RunEval cannot do is refused with the right code,
// through the generated client, and stores nothing.
func TestEvalRefusals(t *testing.T) {
	offlineEnv(t)
	srv := inProcess{}.Serve(t, "--data", filepath.Join(t.TempDir(), "db"))
	c := servicev1.NewEvalServiceClient(srv.Conn)
	good := []byte(demoGreeting)
	for _, tc := range []struct {
		name string
		req  *servicev1.RunEvalRequest
		code codes.Code
		msg  string
	}{
		{"no eval set", &servicev1.RunEvalRequest{AppName: "demo", UserId: "u"}, codes.InvalidArgument, "eval_set: required"},
		{"not JSON", &servicev1.RunEvalRequest{AppName: "demo", UserId: "u", EvalSet: []byte("nope")}, codes.InvalidArgument, "eval_set"},
		{"unsupported metric", &servicev1.RunEvalRequest{AppName: "demo", UserId: "u", EvalSet: good, Config: []byte(`{"criteria": {"safety_v1": 0.8}}`)},
			codes.InvalidArgument, "safety_v1"},
		{"judge", &servicev1.RunEvalRequest{AppName: "demo", UserId: "u", EvalSet: good, Config: []byte(`{"criteria": {"rubric_based_final_response_quality_v1":
			{"threshold": 1, "rubrics": [{"rubric_id": "a", "rubric_content": {"text_property": "b"}}]}}}`)},
			codes.InvalidArgument, "judge_model"},
		{"repeats", &servicev1.RunEvalRequest{AppName: "demo", UserId: "u", EvalSet: good, Repeats: 21}, codes.InvalidArgument, "repeats"},
		{"unknown app", &servicev1.RunEvalRequest{AppName: "nope", UserId: "u", EvalSet: good}, codes.NotFound, "nope"},
		{"no user", &servicev1.RunEvalRequest{AppName: "demo", EvalSet: good}, codes.InvalidArgument, "user_id"},
	} {
		_, err := c.RunEval(t.Context(), tc.req)
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %s naming %q", tc.name, err, tc.code, tc.msg)
		}
	}
	runs, err := c.ListEvalRuns(t.Context(), &servicev1.ListEvalRunsRequest{AppName: "demo", UserId: "u"})
	if err != nil || len(runs.GetEvalRuns()) != 0 {
		t.Errorf("refused evaluations were stored: %v, %v", runs, err)
	}
	resp, err := c.RunEval(t.Context(), &servicev1.RunEvalRequest{AppName: "demo", UserId: "u", EvalSet: good})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetEvalRun(t.Context(), &servicev1.GetEvalRunRequest{AppName: "demo", UserId: "someone-else", EvalRunId: resp.GetEvalRun().GetEvalRunId()})
	if status.Code(err) != codes.NotFound {
		t.Errorf("another user's GetEvalRun: %v, want NotFound", err)
	}
}
