package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// costsServer serves costsConfig on data and returns its clients.
func costsServer(t *testing.T, data string, userDailyTokens int) (servicev1.RunnerServiceClient, servicev1.SessionServiceClient, func()) {
	rc, sc, _, stop := costsServerAt(t, data, userDailyTokens)
	return rc, sc, stop
}

// costsServerAt is costsServer that also says where it serves.
func costsServerAt(t *testing.T, data string, userDailyTokens int) (servicev1.RunnerServiceClient, servicev1.SessionServiceClient, string, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, costsConfig, userDailyTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, rc, sc, stop := stoppableRunsServer(t, data, path)
	return rc, sc, addr, stop
}

func sessionOf(t *testing.T, sc servicev1.SessionServiceClient, app, user, id string) {
	t.Helper()
	if _, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: app, UserId: user, SessionId: id}); err != nil {
		t.Fatal(err)
	}
}

// callCost is what the price list says a call with usage u costs.
func callCost(u *agentrunnerv1.UsageMetadata) int64 {
	return 2*int64(u.GetPromptTokenCount()) + 10*int64(u.GetCandidatesTokenCount())
}

// TestCostsOnBothStores: every model call's event carries its cost,
// tokens times prices exactly; a run's cost and a session's are the sums
// of their events', and stay so after a restart; a model without a price
// leaves cost unknown, not zero.
func TestCostsOnBothStores(t *testing.T) {
	for _, tc := range []struct {
		name string
		data func(t *testing.T) string
	}{
		{"bbolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "agentrunner.db") }},
		{"postgres", func(t *testing.T) string { return pg.URL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			rc, sc, addr, stop := costsServerAt(t, data, 1000)
			runs := map[string]*agentrunnerv1.Run{}
			sessionOf(t, sc, "plain", "u1", "a")
			sessionOf(t, sc, "plain", "u1", "b")
			sessionOf(t, sc, "plain", "u2", "c")
			for i, who := range []struct{ user, session string }{{"u1", "a"}, {"u1", "a"}, {"u1", "b"}, {"u2", "c"}} {
				r := runToEnd(t, rc, &servicev1.RunRequest{AppName: "plain", UserId: who.user, SessionId: who.session, NewMessage: userText(fmt.Sprintf("question number %d, with some words", i))})
				runs[r.GetRunId()] = r
			}
			check := func(when string) {
				byUser := map[string]int64{}
				for _, s := range []struct{ user, session string }{{"u1", "a"}, {"u1", "b"}, {"u2", "c"}} {
					byUser[s.user] += checkSessionCosts(t, sc, "plain", s.user, s.session, runs, when)
				}
				checkDailyCosts(t, usageClient(t, addr), byUser, when)
			}
			check("served")
			stop()
			rc, sc, addr, _ = costsServerAt(t, data, 1000)
			check("after a restart")

			sessionOf(t, sc, "unpriced", "u1", "x")
			r := runToEnd(t, rc, &servicev1.RunRequest{AppName: "unpriced", UserId: "u1", SessionId: "x", NewMessage: userText("hello")})
			if c := r.GetCost(); c.GetUnpricedCalls() != 1 || c.GetMicros() != 0 || r.GetUsage().GetTotalTokenCount() == 0 {
				t.Errorf("a run of an unpriced model: cost %v, usage %v; want one unpriced call and usage", c, r.GetUsage())
			}
		})
	}
}

// checkDailyCosts checks today's totals, of each user and of the app,
// against the sessions' costs.
func checkDailyCosts(t *testing.T, uc servicev1.UsageServiceClient, byUser map[string]int64, when string) {
	t.Helper()
	var app int64
	for user, want := range byUser {
		app += want
		got, err := uc.GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "plain", UserId: user})
		if err != nil {
			t.Fatal(err)
		}
		if c := got.GetTotal().GetCost(); c.GetMicros() != want || c.GetCurrency() != "USD" || len(got.GetDays()) != 1 || got.GetDays()[0].GetModel() != "priced" {
			t.Errorf("%s: GetUsage of %s: %v, want %d USD micros today on model priced", when, user, got, want)
		}
	}
	got, err := uc.GetUsage(t.Context(), &servicev1.GetUsageRequest{AppName: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.GetTotal().GetCost(); c.GetMicros() != app {
		t.Errorf("%s: GetUsage of the app: %v, want %d USD micros", when, c, app)
	}
}

// usageClient is a UsageService client of the server at addr.
func usageClient(t *testing.T, addr string) servicev1.UsageServiceClient {
	return servicev1.NewUsageServiceClient(dial(t, addr))
}

// checkSessionCosts checks the events, runs and session record of one
// session against the price list, and returns the session's cost.
func checkSessionCosts(t *testing.T, sc servicev1.SessionServiceClient, app, user, id string, runs map[string]*agentrunnerv1.Run, when string) int64 {
	t.Helper()
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: user, SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	var session int64
	byRun := map[string]int64{}
	for _, ev := range got.GetEvents() {
		u := ev.GetUsageMetadata()
		if u == nil {
			if ev.GetCost() != nil {
				t.Errorf("%s: event %d has a cost and no usage", when, ev.GetSequence())
			}
			continue
		}
		want := callCost(u)
		if c := ev.GetCost(); c.GetMicros() != want || c.GetCurrency() != "USD" || c.GetModel() != "priced" || c.GetUnpricedCalls() != 0 || want == 0 {
			t.Errorf("%s: event %d (usage %v) costs %v, want %d USD micros of model priced", when, ev.GetSequence(), u, c, want)
		}
		session += want
		byRun[ev.GetInvocationId()] += want
	}
	if c := got.GetSession().GetCost(); c.GetMicros() != session || c.GetCurrency() != "USD" || c.GetUnpricedCalls() != 0 {
		t.Errorf("%s: session %s/%s costs %v, its events %d", when, user, id, c, session)
	}
	for id, want := range byRun {
		if r := runs[id]; r != nil && r.GetCost().GetMicros() != want {
			t.Errorf("%s: run %s's record costs %v, its events %d", when, id, r.GetCost(), want)
		}
	}
	return session
}

// TestConcurrentRunsShareUserBudget: 32 runs of one user at once against
// a budget of about four calls: runs refused at start get the budget's
// error, and what the user spent passes the budget by at most one call
// per run in flight when it was reached (here: fewer than 32 calls).
func TestConcurrentRunsShareUserBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		data func(t *testing.T) string
	}{
		{"bbolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "agentrunner.db") }},
		{"postgres", func(t *testing.T) string { return pg.URL(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			concurrentBudget(t, tc.data(t), 1)
		})
	}
}

// TestReplicasShareUserBudget: two replicas on one PostgreSQL database
// share a user's daily budget.
func TestReplicasShareUserBudget(t *testing.T) {
	concurrentBudget(t, pg.URL(t), 2)
}

// concurrentBudget runs 32 runs of one user at once, each of up to three
// model calls (a loop), in as many sessions, spread over servers replicas
// sharing data, against a user budget of about four calls. A run is
// refused at start once the budget is reached, or stops in band before
// its next call; what the user spent passes the budget by at most one
// call per run in flight.
func concurrentBudget(t *testing.T, data string, servers int) {
	const runs, limit = 32, 60
	var rcs []servicev1.RunnerServiceClient
	var sc servicev1.SessionServiceClient
	for range servers {
		rc, s, _ := costsServer(t, data, limit)
		rcs, sc = append(rcs, rc), s
	}
	for i := range runs {
		sessionOf(t, sc, "capped_loop", "u1", fmt.Sprintf("s%d", i))
	}
	var mu sync.Mutex
	var whole, stopped, refused int
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			last, err := lastRecord(t, rcs[i%servers], &servicev1.RunRequest{AppName: "capped_loop", UserId: "u1", SessionId: fmt.Sprintf("s%d", i), NewMessage: userText("hello, how are you")})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case status.Code(err) == codes.ResourceExhausted:
				refused++
				checkBudgetRefusal(t, err, "user_daily", "user:u1")
			case err != nil:
				t.Errorf("run %d: %v", i, err)
			case last.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
				whole++
			case last.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_FAILED && codes.Code(last.GetError().GetCode()) == codes.ResourceExhausted:
				stopped++
			default:
				t.Errorf("run %d ended %v (%v)", i, last.GetStatus(), last.GetError())
			}
		})
	}
	wg.Wait()
	var spent, maxCall int64
	for i := range runs {
		got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "capped_loop", UserId: "u1", SessionId: fmt.Sprintf("s%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got.GetEvents() {
			n := int64(ev.GetUsageMetadata().GetTotalTokenCount())
			spent, maxCall = spent+n, max(maxCall, n)
		}
	}
	t.Logf("%d runs made all their calls, %d were stopped mid-run, %d refused at start; %d tokens spent against a budget of %d (one call: at most %d)", whole, stopped, refused, spent, limit, maxCall)
	if stopped+refused == 0 || whole+stopped+refused != runs {
		t.Fatalf("%d whole, %d stopped, %d refused of %d runs: the budget stopped nothing", whole, stopped, refused, runs)
	}
	// Every call was checked with the budget not yet reached; those made
	// after it was reached were in flight then, one per run at most.
	if spent >= limit+int64(runs)*maxCall {
		t.Fatalf("spent %d tokens: more than one call per run in flight past the budget of %d", spent, limit)
	}
}

// lastRecord runs req to its end and returns the stream's last run record
// and its error.
func lastRecord(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) (*agentrunnerv1.Run, error) {
	stream, err := rc.Run(t.Context(), req)
	if err != nil {
		return nil, err
	}
	var last *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
		if r := resp.GetRun(); r != nil {
			last = r
		}
	}
}
