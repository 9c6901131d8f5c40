package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// cannedUsage is a UsageService that answers every call with resp (or
// err) and keeps the last request.
type cannedUsage struct {
	servicev1.UnimplementedUsageServiceServer
	mu   sync.Mutex
	last *servicev1.GetUsageRequest
	resp *servicev1.GetUsageResponse
	err  error
}

func (c *cannedUsage) GetUsage(_ context.Context, req *servicev1.GetUsageRequest) (*servicev1.GetUsageResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = req
	return c.resp, c.err
}

func (c *cannedUsage) request() *servicev1.GetUsageRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// serveCanned serves c on a loopback port and returns its address.
func serveCanned(t *testing.T, c *cannedUsage) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	servicev1.RegisterUsageServiceServer(gs, c)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

func usageCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(t.Context(), append([]string{"usage"}, args...), strings.NewReader(""), &out, &errOut)
	code = exitCode(err, &errOut) // it prints the error, as main does
	return out.String(), errOut.String(), code
}

func spend(calls int64, prompt, out int32, cost *agentrunnerv1.Cost) *agentrunnerv1.Spend {
	return &agentrunnerv1.Spend{ModelCalls: calls, Cost: cost,
		Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out, TotalTokenCount: prompt + out}}
}

// TestUsageCommand: the flags become the request; the answer is a table
// by day and model whose costs say unknown and lower bounds as such, and
// a totals row naming the unpriced calls.
func TestUsageCommand(t *testing.T) {
	c := &cannedUsage{resp: &servicev1.GetUsageResponse{
		StartDate: "2024-02-01", EndDate: "2024-02-29",
		Days: []*servicev1.DailyUsage{
			{Date: "2024-02-10", Model: "flash", Spend: spend(2, 1500, 200, &agentrunnerv1.Cost{Currency: "USD", Micros: 12_300})},
			{Date: "2024-02-10", Model: "local-llama", Spend: spend(1, 10, 5, &agentrunnerv1.Cost{UnpricedCalls: 1})},
			{Date: "2024-02-11", Model: "flash", Spend: spend(1_234_567, 1_000_000, 30, &agentrunnerv1.Cost{Currency: "USD", Micros: 2_000_000})},
		},
		Total: spend(1_234_570, 1_001_510, 235, &agentrunnerv1.Cost{Currency: "USD", Micros: 2_012_300, UnpricedCalls: 1}),
	}}
	addr := serveCanned(t, c)
	out, errOut, code := usageCLI(t, "--addr", addr, "--app", "shop", "--user", "ann", "--from", "2024-02-01", "--to", "2024-02-29")
	if code != 0 {
		t.Fatalf("usage exited %d: %s", code, errOut)
	}
	if want := (&servicev1.GetUsageRequest{AppName: "shop", UserId: "ann", StartDate: "2024-02-01", EndDate: "2024-02-29"}); !proto.Equal(c.request(), want) {
		t.Errorf("request %v, want %v", c.request(), want)
	}
	want := `usage of app shop, user ann, 2024-02-01 to 2024-02-29 (UTC days)
DATE        MODEL            CALLS       PROMPT       OUTPUT       TOKENS  COST
2024-02-10  flash                2        1,500          200        1,700  0.0123 USD
2024-02-10  local-llama          1           10            5           15  unknown
2024-02-11  flash        1,234,567    1,000,000           30    1,000,030  2.00 USD
total                    1,234,570    1,001,510          235    1,001,745  ≥ 2.0123 USD (1 call unpriced)
`
	if out != want {
		t.Errorf("usage printed\n%s\nwant\n%s", out, want)
	}

	// Every user, the server's default range, nothing spent.
	c.resp = &servicev1.GetUsageResponse{StartDate: "2024-05-02", EndDate: "2024-05-31", Total: &agentrunnerv1.Spend{}}
	out, _, code = usageCLI(t, "--addr", addr, "--app", "shop")
	if code != 0 || out != "usage of app shop, every user, 2024-05-02 to 2024-05-31 (UTC days)\nno model calls in this range\n" {
		t.Errorf("usage of nothing = %d\n%s", code, out)
	}
	if want := (&servicev1.GetUsageRequest{AppName: "shop"}); !proto.Equal(c.request(), want) {
		t.Errorf("request %v, want %v", c.request(), want)
	}

	// The server's refusal, in one line, exit 1.
	c.err = status.Error(codes.PermissionDenied, "a request for every user (no user_id) is for admins")
	if _, errOut, code := usageCLI(t, "--addr", addr, "--app", "shop"); code != 1 || !strings.Contains(errOut, "agentrunner: PermissionDenied: a request for every user (no user_id) is for admins") {
		t.Errorf("a refused usage = %d %q", code, errOut)
	}
}

// TestUsageCommandLine: a command line that cannot work exits 2 before
// any call, naming the flag.
func TestUsageCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: --app is required"},
		{[]string{"--app", "a", "--from", "2024-2-1"}, `usage: --from "2024-2-1" is not a date of the form YYYY-MM-DD`},
		{[]string{"--app", "a", "--to", "tomorrow"}, `usage: --to "tomorrow" is not a date of the form YYYY-MM-DD`},
		{[]string{"--app", "a", "extra"}, `usage takes no arguments`},
		{[]string{"--app", "a", "--nope"}, "flag provided but not defined: -nope"},
	} {
		_, errOut, code := usageCLI(t, append([]string{"--addr", "127.0.0.1:1"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("usage %q = %d %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestUsageCommandServe runs `agentrunner usage` against a real server
// after runs on a priced model: the totals are those of the stored events.
func TestUsageCommandServe(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, []byte(spendApps), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, rc, sc := runsServer(t, filepath.Join(dir, "a.db"), config)
	createSession(t, sc, "shop", "s")
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "shop", UserId: "u", SessionId: "s", NewMessage: userText("how much is it")})
	out, errOut, code := usageCLI(t, "--addr", addr, "--app", "shop", "--user", "u")
	if code != 0 {
		t.Fatalf("usage = %d\n%s\n%s", code, out, errOut)
	}
	shop := storedSpend(t, sc, "shop")
	want := "  " + spendfmt.Count(shop.prompt+shop.candidates) + "  " + agent.FormatMicros(2*shop.prompt+10*shop.candidates) + " USD\n"
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || !strings.HasPrefix(lines[3], "total ") || !strings.HasSuffix(lines[3]+"\n", want) {
		t.Errorf("usage printed\n%s\nwant one row and a total ending %q", out, want)
	}
}
