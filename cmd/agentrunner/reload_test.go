package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// reloadApps is the apps file of the reload test: the offline model
// takes 3s to answer, so that runs are in flight when the file changes;
// ask_user is a tool the caller answers, so that runs wait. The offline
// model counts a quarter of the system instruction's bytes as prompt
// tokens: that is how a test sees which instruction a model call had.
const reloadApps = `models:
  - name: slow
    provider: offline
    offline: { first_chunk_delay: 3s, chunk_delay: 1ms }
apps:
  - name: desk
    function_tools:
      - { name: ask_user, description: Asks the user., parameters: { type: object } }
    root_agent: { name: desk, llm: { model: slow, tools: [ask_user], instruction: %q } }
`

// brokenApps has three problems, each of which the start reports.
const brokenApps = `models:
  - { name: slow, provider: offline }
apps:
  - name: desk
    root_agent: { name: desk, llm: { model: nowhere } }
  - name: other
    colour: blue
    root_agent: { name: other, llm: { model: slow, instrution: x } }
`

// newInstruction is long enough that a call with it counts over 500
// prompt tokens; one with the old instruction counts under 100.
var newInstruction = strings.Repeat("Answer in the new way. ", 100)

// TestReloadKeepsRunsOnTheirConfig is issue 51's reload: the agent's
// instruction changes while 20 runs are in flight and 5 wait for input;
// new runs use the new text, the 25 finish on the old one, nothing is
// interrupted; a broken file changes nothing and reports every error.
func TestReloadKeepsRunsOnTheirConfig(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "apps.yaml"), fmt.Sprintf(reloadApps, "Be old."))
	addr, rc, sc := runsServer(t, filepath.Join(dir, "data.db"), config)
	ac := servicev1.NewAdminServiceClient(dial(t, addr))
	v1 := appVersion(t, rc)

	waiting := startWaitingRuns(t, rc, sc, 5)
	inFlight := startSlowRuns(t, rc, sc, 20)

	writeFile(t, config, fmt.Sprintf(reloadApps, newInstruction))
	resp, err := ac.ReloadApps(t.Context(), &servicev1.ReloadAppsRequest{})
	if err != nil {
		t.Fatalf("ReloadApps: %v", err)
	}
	reloaded := time.Now()
	v2 := appVersion(t, rc)
	if got := resp.GetApps(); len(got) != 1 || got[0].GetChange() != servicev1.AppChange_APP_CHANGE_CHANGED || got[0].GetConfigVersion() != v2 || v2 == v1 {
		t.Fatalf("ReloadApps said %v; ListApps says %s, was %s", got, v2, v1)
	}
	// New runs use the new text at once, while the old ones still go.
	fresh := runOn(t, rc, sc, "after", "hello")
	checkRun(t, sc, fresh, v2, true)

	for _, out := range inFlight {
		rec := <-out
		// In flight across the reload: it ended after it, on the old text.
		if !rec.GetEndTime().AsTime().After(reloaded) {
			t.Errorf("run %s ended before the reload (the model's 3s were not enough on this machine)", rec.GetRunId())
		}
		checkRun(t, sc, rec, v1, false)
	}
	for i, run := range waiting {
		rec := answer(t, rc, run)
		if rec.GetRunId() != run.GetRunId() {
			t.Errorf("waiting run %d: resumed as %s", i, rec.GetRunId())
		}
		checkRun(t, sc, rec, v1, false)
	}

	// A broken file changes nothing and says everything wrong with it.
	writeFile(t, config, brokenApps)
	_, err = ac.ReloadApps(t.Context(), &servicev1.ReloadAppsRequest{})
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("ReloadApps of a broken file: %v, want InvalidArgument", err)
	}
	for _, want := range []string{"apps.yaml:5", "nowhere", "apps.yaml:7", `unknown field "colour"`, "apps.yaml:8", `unknown field "instrution"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if got := appVersion(t, rc); got != v2 {
		t.Errorf("after a refused reload the app's version is %s, want %s", got, v2)
	}
	checkRun(t, sc, runOn(t, rc, sc, "refused", "hello"), v2, true)
	checkReloadCLI(t, addr, config, v2)
}

// checkReloadCLI checks `agentrunner reload`: it fails on the broken file
// with its errors, and reports the file of version v unchanged.
func checkReloadCLI(t *testing.T, addr, config, v string) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(t.Context(), []string{"reload", "--addr", addr}, strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `unknown field "colour"`) {
		t.Errorf("reload of a broken file: %v, want its errors", err)
	}
	writeFile(t, config, fmt.Sprintf(reloadApps, newInstruction))
	out.Reset()
	if err := run(t.Context(), []string{"reload", "--addr", addr}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("reload: %v\n%s", err, errOut.String())
	}
	if !regexp.MustCompile(`(?m)^desk\s+unchanged\s+` + v + `$`).MatchString(out.String()) {
		t.Errorf("reload printed:\n%s\nwant desk unchanged at %s", out.String(), v)
	}
}

// appVersion is desk's config version as ListApps shows it.
func appVersion(t *testing.T, rc servicev1.RunnerServiceClient) string {
	t.Helper()
	resp, err := rc.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil || len(resp.GetApps()) != 1 || resp.GetApps()[0].GetConfigVersion() == "" {
		t.Fatalf("ListApps: %v, %v: want desk with a config version", resp, err)
	}
	return resp.GetApps()[0].GetConfigVersion()
}

// startSlowRuns starts n runs, each on its own session, and returns, for
// each, where its final record comes once its stream ends. Each has
// started (its first record came) when startSlowRuns returns.
func startSlowRuns(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, n int) []<-chan *agentrunnerv1.Run {
	t.Helper()
	outs := make([]<-chan *agentrunnerv1.Run, n)
	var started sync.WaitGroup
	for i := range n {
		session := fmt.Sprintf("flight-%d", i)
		createSession(t, sc, "desk", session)
		out := make(chan *agentrunnerv1.Run, 1)
		outs[i] = out
		started.Add(1)
		go func() {
			out <- streamRunRecord(t, rc, &servicev1.RunRequest{AppName: "desk", UserId: "u", SessionId: session, NewMessage: userText("hello")}, started.Done)
		}()
	}
	started.Wait()
	return outs
}

// streamRunRecord runs req and returns the run's last record; first is called
// on the first one. Errors are reported, and a nil record returned.
func streamRunRecord(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest, first func()) *agentrunnerv1.Run {
	stream, err := rc.Run(t.Context(), req)
	var last *agentrunnerv1.Run
	for err == nil {
		var resp *servicev1.RunResponse
		if resp, err = stream.Recv(); resp.GetRun() != nil {
			if last == nil {
				first()
			}
			last = resp.GetRun()
		}
	}
	if last == nil {
		first()
	}
	if !errors.Is(err, io.EOF) {
		t.Errorf("run on %s: %v", req.GetSessionId(), err)
	}
	return last
}

// runOn runs message on a new session and returns its last record.
func runOn(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, session, message string) *agentrunnerv1.Run {
	t.Helper()
	createSession(t, sc, "desk", session)
	return streamRunRecord(t, rc, &servicev1.RunRequest{AppName: "desk", UserId: "u", SessionId: session, NewMessage: userText(message)}, func() {})
}

// startWaitingRuns runs n runs that end waiting for ask_user's answer.
func startWaitingRuns(t *testing.T, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient, n int) []*agentrunnerv1.Run {
	t.Helper()
	runs := make([]*agentrunnerv1.Run, n)
	var wg sync.WaitGroup
	for i := range n {
		session := fmt.Sprintf("wait-%d", i)
		createSession(t, sc, "desk", session)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = streamRunRecord(t, rc, &servicev1.RunRequest{AppName: "desk", UserId: "u", SessionId: session, NewMessage: userText("use ask_user")}, func() {})
		}()
	}
	wg.Wait()
	for i, r := range runs {
		if r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || len(r.GetPendingCallIds()) != 1 {
			t.Fatalf("waiting run %d: %v, want INPUT_REQUIRED on one call", i, r)
		}
	}
	return runs
}

// answer resumes a waiting run with ask_user's answer and returns the
// run's last record.
func answer(t *testing.T, rc servicev1.RunnerServiceClient, run *agentrunnerv1.Run) *agentrunnerv1.Run {
	t.Helper()
	resp, _ := structpb.NewStruct(map[string]any{"answer": "yes"})
	stream, err := rc.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: run.GetRunId(), Answers: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{
		Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: run.GetPendingCallIds()[0], Name: "ask_user", Response: resp}},
	}}}})
	var last *agentrunnerv1.Run
	for err == nil {
		var r *servicev1.RunResponse
		if r, err = stream.Recv(); r.GetRun() != nil {
			last = r.GetRun()
		}
	}
	if !errors.Is(err, io.EOF) {
		t.Fatalf("resume %s: %v", run.GetRunId(), err)
	}
	return last
}

// checkRun checks that a run succeeded on config version, and that each
// of its model calls had the new instruction (over 500 prompt tokens) or
// the old one (under 100).
func checkRun(t *testing.T, sc servicev1.SessionServiceClient, rec *agentrunnerv1.Run, version string, newText bool) {
	t.Helper()
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || rec.GetConfigVersion() != version {
		t.Errorf("run %s on %s: %s on config %q, want SUCCEEDED on %q", rec.GetRunId(), rec.GetSessionId(), rec.GetStatus(), rec.GetConfigVersion(), version)
		return
	}
	resp, err := sc.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: "desk", UserId: "u", SessionId: rec.GetSessionId(), PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, ev := range resp.GetEvents() {
		if ev.GetSequence() < rec.GetFirstSequence() || ev.GetUsageMetadata() == nil {
			continue
		}
		calls++
		if p := ev.GetUsageMetadata().GetPromptTokenCount(); (p > 500) != newText || (!newText && p >= 100) {
			t.Errorf("run %s: a model call counted %d prompt tokens, want the %s instruction's (new: %v)", rec.GetRunId(), p, map[bool]string{true: "new", false: "old"}[newText], newText)
		}
	}
	if calls == 0 {
		t.Errorf("run %s: no model call in its events", rec.GetRunId())
	}
}
