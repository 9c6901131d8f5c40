package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/mcpdemo"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHangEnv makes the test binary an MCP server on stdio whose only tool,
// hang, writes a line to the file the variable names and then never
// answers: a tool still running when the server is killed.
const mcpHangEnv = "AGENTRUNNER_TEST_MCP_HANG"

func TestMain(m *testing.M) {
	// The default apps run this executable as `agentrunner mcp-demo`; in
	// tests that is the test binary, which must then be that server too.
	if len(os.Args) > 1 && os.Args[1] == "mcp-demo" {
		if err := mcpdemo.Main(context.Background(), nil, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if marker := os.Getenv(mcpHangEnv); marker != "" {
		s := mcp.NewServer(&mcp.Implementation{Name: "hang", Version: "v0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Starts and never ends."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, "started")
				f.Close()
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestKill9WhileAToolRuns kills the server while an MCP tool runs: after a
// restart the ledger shows the call started and not finished, and nothing
// ran it again.
func TestKill9WhileAToolRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "started")
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `
apps:
  - name: tools
    mcp_servers: [{ name: slow, command: %q, env: ["%s=%s"] }]
    root_agent: { name: worker, llm: { model: offline, mcp: [{ server: slow }] } }
`, exe, mcpHangEnv, marker), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "agentrunner.db")
	p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config)
	conn := dial(t, p.addr)
	key := &servicev1.ListToolCallsRequest{AppName: "tools", UserId: "u", SessionId: "s"}
	if _, err := servicev1.NewSessionServiceClient(conn).CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "tools", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	stream, err := servicev1.NewRunnerServiceClient(conn).Run(t.Context(), &servicev1.RunRequest{AppName: "tools", UserId: "u", SessionId: "s",
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "call hang"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); err != nil || resp.GetEvent().GetContent().GetParts()[0].GetFunctionCall().GetName() != "hang" {
		t.Fatalf("first event %v, %v; want the call", resp, err)
	}
	waitForLines(t, marker, 1)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited

	p = startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data, "--config", config)
	ledger, err := servicev1.NewSessionServiceClient(dial(t, p.addr)).ListToolCalls(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	calls := ledger.GetToolCalls()
	if len(calls) != 1 || calls[0].GetTool() != "hang" || calls[0].GetCallSequence() == 0 || calls[0].GetResponseSequence() != 0 {
		t.Fatalf("ledger after restart %v; want hang started and not finished", calls)
	}
	if n := countLines(t, marker); n != 1 {
		t.Fatalf("the tool started %d times", n)
	}
}

// waitForLines waits, boundedly, until the file has n lines.
func waitForLines(t *testing.T, path string, n int) {
	t.Helper()
	for range 200 {
		if countLines(t, path) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a file another process writes
	}
	t.Fatalf("%s never had %d lines", path, n)
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
