package server

import (
	"context"
	"fmt"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpStdioEnv makes the test binary an MCP server on stdio (see TestMain):
// the real go-sdk server, in a process of its own, as a configured command
// would be.
const mcpStdioEnv = "AGENTRUNNER_TEST_MCP_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(mcpStdioEnv) == "1" {
		if err := newMCPServer(nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "mcp stdio server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m, &pg))
}

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs it (see pgtest).
var pg pgtest.Shared

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sum struct {
	Sum float64 `json:"sum"`
	Key string  `json:"key"`
}

// newMCPServer is a go-sdk server with three tools: add, which answers
// with its idempotency key too; crash, which ends the process (stdio) or
// fails the call (HTTP); and hang, which answers only when the call is
// cancelled. calls counts the calls it got (HTTP only).
func newMCPServer(calls *atomic.Int32) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test-tools", Version: "v0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers."}, func(_ context.Context, req *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, sum, error) {
		if calls != nil {
			calls.Add(1)
		}
		key, _ := req.Params.Meta["agentrunner/idempotency_key"].(string)
		return nil, sum{Sum: in.A + in.B, Key: key}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Crashes."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		if calls == nil {
			os.Exit(3) // the stdio server dies mid-call
		}
		return nil, nil, fmt.Errorf("crashed")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	return s
}

// mcpApps builds two apps on the offline model: "mcp", an agent with the
// tools of a stdio MCP server (this test binary), and "remote", one with
// the add tool of the streamable HTTP server at url.
func mcpApps(t *testing.T, url string) []apps.App {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := apps.Parse("apps.yaml", []byte(fmt.Sprintf(`
apps:
  - name: mcp
    mcp_servers: [{ name: local, command: %q, env: ["%s=1"], timeout: 300ms }]
    root_agent: { name: calc, llm: { model: offline, mcp: [{ server: local }] } }
  - name: remote
    mcp_servers: [{ name: web, url: %q, timeout: 2s }]
    root_agent: { name: calc, llm: { model: offline, mcp: [{ server: web, tools: [add] }] } }
`, exe, mcpStdioEnv, url)))
	if err != nil {
		t.Fatal(err)
	}
	built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return offline.New(offline.Config{}), nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, a := range built {
			_ = a.Close()
		}
	})
	return built
}

// TestMCPTools calls the tools of a real go-sdk MCP server over stdio
// through gRPC: a result, a server that dies mid-call (an error the model
// reads, the run goes on, and the next call reconnects to a new process),
// and a hanging tool (the configured timeout).
func TestMCPTools(t *testing.T) {
	var remoteCalls atomic.Int32
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newMCPServer(&remoteCalls) }, nil))
	t.Cleanup(remote.Close)
	built := mcpApps(t, remote.URL)
	e := newEnv(t, withRunnerApps(t, func(*testing.T) apps.App { return built[0] }, func(*testing.T) apps.App { return built[1] }))
	e.createSession(t, "mcp", "u1", "s1")
	e.createSession(t, "remote", "u1", "s1")
	tests := []struct {
		msg  string
		want string // substring of the model's summary of the tool's response
	}{
		{msg: `call add {"a": 2, "b": 3}`, want: `add returned {"key":"mcp/u1/s1/`},
		{msg: `call crash`, want: `crash returned {"error":"mcp server local: connection lost during the call`},
		{msg: `call add {"a": 1, "b": 1}`, want: `"sum":2`},
		{msg: `call hang`, want: `hang returned {"error":"mcp server local: no answer within 300ms`},
		{msg: `call add {"a": 5, "b": 5}`, want: `"sum":10`},
	}
	for _, tc := range tests {
		res := e.run(t, t.Context(), runReq("mcp", "s1", tc.msg))
		if res.status != nil || len(res.kinds) != 3 || !strings.Contains(res.kinds[2], tc.want) {
			t.Fatalf("%s: %v %q, want a summary with %q", tc.msg, res.status, res.kinds, tc.want)
		}
	}
	res := e.run(t, t.Context(), runReq("remote", "s1", `call add {"a": 20, "b": 22}`))
	if res.status != nil || len(res.kinds) != 3 || !strings.Contains(res.kinds[2], `"sum":42`) || remoteCalls.Load() != 1 {
		t.Fatalf("remote: %v %q (%d calls)", res.status, res.kinds, remoteCalls.Load())
	}
	list, err := e.runner.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, a := range list.GetApps() {
		tools = append(tools, a.GetName()+": "+strings.Join(a.GetRootAgent().GetTools(), ","))
		for _, d := range a.GetRootAgent().GetToolDetails() {
			if d.GetKind() != agentrunnerv1.ToolKind_TOOL_KIND_MCP || d.GetParameters() == nil {
				t.Errorf("%s: tool %v; want an MCP tool with its schema", a.GetName(), d)
			}
		}
	}
	if want := []string{"mcp: add,crash,hang", "remote: add"}; !slices.Equal(tools, want) {
		t.Fatalf("ListApps tools %q, want %q", tools, want)
	}
}
