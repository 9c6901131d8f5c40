package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model/providers"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The apps validator and the factory the server builds with must know the
// same providers.
func TestProviderNamesAgree(t *testing.T) {
	if !slices.Equal(apps.Providers, providers.Names) {
		t.Fatalf("apps.Providers = %v, providers.Names = %v", apps.Providers, providers.Names)
	}
}

const keylessConfig = `models:
  - name: gpt
    provider: openai
    model: gpt-4o
    api_key_env: AGENTRUNNER_TEST_OPENAI_KEY
apps:
  - name: writer
    root_agent: { name: w, llm: { model: gpt } }
  - name: helpdesk
    root_agent: { name: answer, llm: { model: offline } }
`

// TestServeWithoutModelCredentials: a model whose key variable is unset
// does not stop the server. The start logs the app as unavailable with
// what to set, ListApps says the same, and a Run on the app fails with
// FailedPrecondition (a script checking exit codes sees it), while the
// other app serves.
func TestServeWithoutModelCredentials(t *testing.T) {
	t.Setenv("AGENTRUNNER_TEST_OPENAI_KEY", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(cfg, []byte(keylessConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "a.db"), "--config", cfg)
	const reason = "model gpt (openai) needs AGENTRUNNER_TEST_OPENAI_KEY set"
	if l := logs.String(); !strings.Contains(l, "app unavailable") || !strings.Contains(l, reason) {
		t.Errorf("start log does not say the app is unavailable and why:\n%s", l)
	}
	conn := dial(t, addr)
	rc := servicev1.NewRunnerServiceClient(conn)
	list, err := rc.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list.GetApps() {
		if want := map[string]string{"writer": reason}[a.GetName()]; a.GetUnavailableReason() != want {
			t.Errorf("ListApps: %s unavailable_reason = %q, want %q", a.GetName(), a.GetUnavailableReason(), want)
		}
	}
	sessions := servicev1.NewSessionServiceClient(conn)
	for _, app := range []string{"writer", "helpdesk"} {
		if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: app, UserId: "u", SessionId: "s"}); err != nil {
			t.Fatal(err)
		}
	}
	msg := &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "writer", UserId: "u", SessionId: "s", NewMessage: msg})
	if err == nil {
		_, err = stream.Recv()
	}
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), reason) {
		t.Errorf("Run on writer: %v %q, want FailedPrecondition saying %q", st.Code(), st.Message(), reason)
	}
	if n := countRun(t, rc, "helpdesk", "hi"); n == 0 {
		t.Error("helpdesk answered nothing")
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
}

// TestServeRefusesUndeclaredModel: a model name that is neither declared
// nor a Gemini name stops the start with the file, line and field.
func TestServeRefusesUndeclaredModel(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(testConfig, "model: offline", "model: gpt-4o", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(t.Context(), append(noConsole(), "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "a.db"), "--config", cfg), strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "apps.yaml:7") || !strings.Contains(err.Error(), "root_agent.llm.model") || !strings.Contains(err.Error(), `"gpt-4o" is not declared`) {
		t.Fatalf("serve = %v, want the file, line and field of the undeclared model", err)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

// TestReadmeModelsExample loads the README's models example as the server
// would, without any key set: it must parse, and its app must come out
// unavailable for the reason the README gives.
func TestReadmeModelsExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```yaml\nmodels:")
	block, _, _ = strings.Cut(block, "```")
	if !ok || block == "" {
		t.Fatal("README has no ```yaml block starting with models:")
	}
	cfg, err := apps.Parse("README.md", []byte("models:"+block), apps.UndeclaredModels(providers.IsGeminiName, "a Gemini model name"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE"} {
		t.Setenv(k, "")
	}
	f := providers.New(providers.Options{Models: cfg.GetModels(), Getenv: func(string) string { return "" }})
	built, err := apps.Build(t.Context(), cfg, f.Model)
	if err != nil {
		t.Fatal(err)
	}
	if want := "model gpt (openai) needs OPENAI_API_KEY set"; len(built) != 1 || built[0].Unavailable != want {
		t.Fatalf("built %d apps, unavailable %q; want writer unavailable with %q", len(built), built[0].Unavailable, want)
	}
}
