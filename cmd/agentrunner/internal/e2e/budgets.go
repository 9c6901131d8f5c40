package e2e

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// CostsConfig prices the offline model at 2 per million prompt tokens
// and 10 per million answer tokens: a call costs prompt*2 + answer*10
// micro-dollars, exactly. "plain" has no budget, "looped" caps a run at
// 60 tokens, "capped" a user's day at the tokens given to its %[1]d.
const CostsConfig = `
models:
  - name: priced
    provider: offline
    price: {currency: USD, input: 2, output: 10}
apps:
  - name: plain
    root_agent: {name: answer, llm: {model: priced}}
  - name: unpriced
    root_agent: {name: answer, llm: {model: offline}}
  - name: looped
    budgets: {run: {tokens: 60}}
    root_agent:
      name: loop
      loop: {max_iterations: 40}
      sub_agents:
        - {name: chatty, llm: {model: priced}}
  - name: capped
    budgets: {user_daily: {tokens: %[1]d}}
    root_agent: {name: answer, llm: {model: priced}}
  - name: sessioned
    budgets: {session: {cost: 0.000001}}
    root_agent: {name: answer, llm: {model: priced}}
  - name: capped_loop
    budgets: {user_daily: {tokens: %[1]d}}
    root_agent:
      name: thrice
      loop: {max_iterations: 3}
      sub_agents:
        - {name: chatty, llm: {model: priced}}
`

// runBudgetStopsLoop: a loop agent whose run reaches its budget
// stops before its next model call with an in-band RESOURCE_EXHAUSTED
// naming the budget, ends FAILED, and keeps what it stored.
func runBudgetStopsLoop(t *testing.T, tg Target) {
	rc, sc := costsServer(t, tg, 1000)
	CreateSession(t, sc, "looped", "u1", "s")
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "looped", UserId: "u1", SessionId: "s", NewMessage: UserText("go round and round")})
	if err != nil {
		t.Fatal(err)
	}
	var inBand []*agentrunnerv1.Status
	var last *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if e := resp.GetError(); e != nil {
			inBand = append(inBand, e)
		}
		if r := resp.GetRun(); r != nil {
			last = r
		}
	}
	if len(inBand) != 1 || codes.Code(inBand[0].GetCode()) != codes.ResourceExhausted || !strings.Contains(inBand[0].GetMessage(), "budget run") {
		t.Fatalf("in-band errors %v, want one RESOURCE_EXHAUSTED naming the run budget", inBand)
	}
	if last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED || codes.Code(last.GetError().GetCode()) != codes.ResourceExhausted {
		t.Fatalf("run ended %v (%v), want FAILED with RESOURCE_EXHAUSTED", last.GetStatus(), last.GetError())
	}
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "looped", UserId: "u1", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var calls, tokens int64
	for _, ev := range got.GetEvents() {
		if u := ev.GetUsageMetadata(); u != nil {
			calls++
			tokens += int64(u.GetTotalTokenCount())
		}
	}
	// It went on while under 60 tokens and not past: the last call is the
	// one that reached the budget.
	if calls < 2 || calls >= 40 || tokens < 60 || last.GetUsage().GetTotalTokenCount() != int32(tokens) {
		t.Fatalf("%d model calls stored, %d tokens (record: %v); want the loop stopped once 60 tokens were reached", calls, tokens, last.GetUsage())
	}
}

// userDailyBudget: once a user's day reaches its budget, the next run
// of that user is refused with RESOURCE_EXHAUSTED and the details a
// client acts on; another user still runs.
func userDailyBudget(t *testing.T, tg Target) {
	rc, sc := costsServer(t, tg, 1)
	CreateSession(t, sc, "capped", "u1", "s")
	CreateSession(t, sc, "capped", "u2", "s")
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "capped", UserId: "u1", SessionId: "s", NewMessage: UserText("hello")})
	err := RunOnce(t, rc, &servicev1.RunRequest{AppName: "capped", UserId: "u1", SessionId: "s", NewMessage: UserText("hello again")})
	CheckBudgetRefusal(t, err, "user_daily", "user:u1")
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "capped", UserId: "u2", SessionId: "s", NewMessage: UserText("hello")})
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "capped", UserId: "u1", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.GetEvents()); n != 2 {
		t.Fatalf("u1's session holds %d events, want the first run's 2: a refused run stores nothing", n)
	}
}

// sessionBudget: a session whose calls reached its budget in money
// refuses the next run, naming the budget, with no reset time (a session
// budget never resets); another session of the same user still runs.
func sessionBudget(t *testing.T, tg Target) {
	rc, sc := costsServer(t, tg, 1000)
	CreateSession(t, sc, "sessioned", "u1", "a")
	CreateSession(t, sc, "sessioned", "u1", "b")
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "sessioned", UserId: "u1", SessionId: "a", NewMessage: UserText("hello")})
	err := RunOnce(t, rc, &servicev1.RunRequest{AppName: "sessioned", UserId: "u1", SessionId: "a", NewMessage: UserText("hello again")})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "budget session") || !strings.Contains(st.Message(), "0.000001 USD") {
		t.Fatalf("second run of session a: %v, want RESOURCE_EXHAUSTED naming the session budget in USD", err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && (info.GetMetadata()["unit"] != "USD" || info.GetMetadata()["resets_at"] != "") {
			t.Errorf("ErrorInfo %v: want unit USD and no reset time", info)
		}
		if _, ok := d.(*errdetails.RetryInfo); ok {
			t.Errorf("a session budget never resets, yet the refusal has %v", d)
		}
	}
	RunToEnd(t, rc, &servicev1.RunRequest{AppName: "sessioned", UserId: "u1", SessionId: "b", NewMessage: UserText("hello")})
}

// CheckBudgetRefusal checks a refusal by a daily budget: its code, and
// the QuotaFailure, ErrorInfo and RetryInfo details.
func CheckBudgetRefusal(t *testing.T, err error, budget, subject string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "budget "+budget) {
		t.Fatalf("refusal: %v, want RESOURCE_EXHAUSTED naming budget %s", err, budget)
	}
	var quota, info, retry bool
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.QuotaFailure:
			quota = len(d.GetViolations()) == 1 && d.GetViolations()[0].GetSubject() == subject
		case *errdetails.ErrorInfo:
			m := d.GetMetadata()
			spent, _ := strconv.Atoi(m["spent"])
			limit, _ := strconv.Atoi(m["limit"])
			info = d.GetReason() == "BUDGET_EXCEEDED" && m["budget"] == budget && m["unit"] == "tokens" && limit > 0 && spent >= limit && m["resets_at"] != ""
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() > 0
		}
	}
	if !quota || !info || !retry {
		t.Fatalf("details %v: QuotaFailure naming %s %v, ErrorInfo %v, RetryInfo %v", st.Details(), subject, quota, info, retry)
	}
}

// costsServe serves CostsConfig, its user_daily budgets at
// userDailyTokens, on a new bbolt file.
func costsServe(t *testing.T, tg Target, userDailyTokens int) *Server {
	t.Helper()
	config := WriteFile(t, "apps.yaml", fmt.Sprintf(CostsConfig, userDailyTokens))
	return tg.Serve(t, "--data", filepath.Join(t.TempDir(), "agentrunner.db"), "--config", config)
}

// costsServer is costsServe's runner and session clients.
func costsServer(t *testing.T, tg Target, userDailyTokens int) (servicev1.RunnerServiceClient, servicev1.SessionServiceClient) {
	t.Helper()
	srv := costsServe(t, tg, userDailyTokens)
	return srv.Runner(), srv.Sessions()
}
