package server

import (
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model/providers"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// credentialApps builds, from one apps file, an app whose model has no key
// in the environment and one on the offline model, through the providers
// factory the server uses.
func credentialApps(t *testing.T) []apps.App {
	cfg, err := apps.Parse("apps.yaml", []byte(`
models:
  - { name: gpt, provider: openai, model: gpt-4o, api_key_env: TEST_OPENAI_KEY }
apps:
  - name: writer
    root_agent: { name: w, llm: { model: gpt } }
  - name: echo
    root_agent: { name: e, llm: { model: offline } }
`), apps.UndeclaredModels(providers.IsGeminiName, "a Gemini model name"))
	if err != nil {
		t.Fatal(err)
	}
	f := providers.New(providers.Options{Models: cfg.GetModels(), Getenv: func(string) string { return "" }})
	built, err := apps.Build(t.Context(), cfg, f.Model)
	if err != nil {
		t.Fatal(err)
	}
	return built
}

// TestAppWithoutCredentials: ListApps says why an app cannot run, and
// Run, StartRun and ResumeRun on it fail with FailedPrecondition saying
// what to set, before anything is stored; the other app runs.
func TestAppWithoutCredentials(t *testing.T) {
	built := credentialApps(t)
	e := newEnv(t, withRunnerApps(t, func(*testing.T) apps.App { return built[0] }, func(*testing.T) apps.App { return built[1] }))
	e.createSession(t, "writer", "u1", "s1")

	list, err := e.runner.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, a := range list.GetApps() {
		reasons[a.GetName()] = a.GetUnavailableReason()
	}
	const want = "model gpt (openai) needs TEST_OPENAI_KEY set"
	if reasons["writer"] != want || reasons["echo"] != "" {
		t.Fatalf("unavailable reasons = %q, want writer: %q and echo available", reasons, want)
	}

	stream, err := e.runner.Run(t.Context(), runReq("writer", "s1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = collectRun(t, stream)
	wantFailedPrecondition(t, "Run", err, want)
	_, err = e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "writer", UserId: "u1", SessionId: "s1", NewMessage: text("hello")})
	wantFailedPrecondition(t, "StartRun", err, want)
	// A run of the app interrupted before a restart without the key.
	cut := &agentrunnerv1.Run{RunId: "e-cut", AppName: "writer", UserId: "u1", SessionId: "s1", Status: agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED, CreateTime: timestamppb.Now()}
	if err := e.store.PutRun(t.Context(), cut); err != nil {
		t.Fatal(err)
	}
	resume, err := e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: "e-cut"})
	if err == nil {
		_, err = collectRun(t, resume)
	}
	wantFailedPrecondition(t, "ResumeRun", err, want)

	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "writer", UserId: "u1", SessionId: "s1"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Fatalf("the refused runs stored %d events (%v)", len(got.GetEvents()), err)
	}
	runs, err := e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "writer", UserId: "u1", SessionId: "s1"})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("the refused runs left records: %v, %v", runs.GetRuns(), err)
	}

	e.createSession(t, "echo", "u1", "s2")
	if res := e.run(t, t.Context(), runReq("echo", "s2", "hello")); res.status != nil || len(res.answers) != 1 {
		t.Fatalf("the available app: %v %q", res.status, res.kinds)
	}
}

func wantFailedPrecondition(t *testing.T, rpc string, err error, reason string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), reason) || !strings.Contains(st.Message(), "writer") {
		t.Errorf("%s: %v %q, want FailedPrecondition naming the app and saying %q", rpc, st.Code(), st.Message(), reason)
	}
}
