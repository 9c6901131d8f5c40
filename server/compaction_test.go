package server

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// TestCompactionKeepsPendingCalls stays until the client-executed tools of
// an apps file (ordersApp, tellerApp) have a harness in runner.

// pendingApp compacts every 2 runs, on the offline model: its clerk calls
// get_order, which the caller executes, and its teller's refund waits for
// the caller's confirmation.
func pendingApp(runs *atomic.Int32) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		a := tellerApp(runs)(t)
		a.Compaction = runner.Compaction{Summarizer: offline.New(offline.Config{}), Interval: 2}
		return a
	}
}

// TestCompactionKeepsPendingCalls: a compaction that comes while a call
// waits for the caller (a client-executed tool, a confirmation) ends
// before the call, and the caller's answer is taken afterwards.
func TestCompactionKeepsPendingCalls(t *testing.T) {
	t.Run("client tool", func(t *testing.T) {
		order := ordersApp(t)
		order.Compaction = runner.Compaction{Summarizer: offline.New(offline.Config{}), Interval: 2}
		e := newEnv(t, withRunnerApps(t, func(*testing.T) apps.App { return order }))
		e.createSession(t, "orders", "u1", "s1")
		if res := e.run(t, t.Context(), runReq("orders", "s1", "hello")); res.status != nil {
			t.Fatal(res.status)
		}
		res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
		call := res.events[0]
		id := call.GetContent().GetParts()[0].GetFunctionCall().GetId()
		compaction := lastCompaction(t, res)
		if compaction.GetEndSequence() >= call.GetSequence() {
			t.Fatalf("compaction covers %d..%d, past the waiting call at %d", compaction.GetStartSequence(), compaction.GetEndSequence(), call.GetSequence())
		}
		res = e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
		if res.status != nil || !slices.ContainsFunc(res.kinds, func(k string) bool { return strings.Contains(k, "get_order returned") }) {
			t.Fatalf("the answer after the compaction: %v %q", res.status, res.kinds)
		}
	})
	t.Run("confirmation", func(t *testing.T) {
		var refunds atomic.Int32
		e := newEnv(t, withRunnerApps(t, pendingApp(&refunds)))
		e.createSession(t, "bank", "u1", "s1")
		if res := e.run(t, t.Context(), runReq("bank", "s1", "hello")); res.status != nil {
			t.Fatal(res.status)
		}
		res := e.run(t, t.Context(), runReq("bank", "s1", `call refund {"amount": 5}`))
		if len(res.events) < 2 {
			t.Fatalf("refund: %q", res.kinds)
		}
		ask := res.events[1]
		compaction := lastCompaction(t, res)
		if compaction.GetEndSequence() >= res.events[0].GetSequence() {
			t.Fatalf("compaction covers %d..%d, past the call waiting for confirmation at %d", compaction.GetStartSequence(), compaction.GetEndSequence(), res.events[0].GetSequence())
		}
		res = e.run(t, t.Context(), confirm(t, ask.GetLongRunningToolIds()[0], true))
		if res.status != nil || refunds.Load() != 1 {
			t.Fatalf("confirmed after the compaction: %v %q, refunded %d times", res.status, res.kinds, refunds.Load())
		}
	})
}

// lastCompaction returns the compaction the run ended with.
func lastCompaction(t *testing.T, res runResult) *agentrunnerv1.EventCompaction {
	t.Helper()
	if len(res.events) == 0 {
		t.Fatalf("no events: %v", res.status)
	}
	c := res.events[len(res.events)-1].GetActions().GetCompaction()
	if c == nil {
		t.Fatalf("the run did not end with a compaction: %q", res.kinds)
	}
	return c
}
