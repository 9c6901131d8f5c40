package server

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// TestLedgerTakesLateAnswer: a call a new message superseded is closed in
// the tool-call ledger by the runner's interim result; the caller's real
// answer, sent later, replaces it there: ListToolCalls gives the answer's
// sequence and the digest of its result, not the cancellation's (issue
// 45, item 8c).
func TestLedgerTakesLateAnswer(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, ordersApp))
	e.createSession(t, "orders", "u1", "s1")
	res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
	if res.status != nil || !slices.Equal(res.kinds, []string{"clerk: call get_order"}) {
		t.Fatalf("call: %v %q", res.status, res.kinds)
	}
	id := res.events[0].GetContent().GetParts()[0].GetFunctionCall().GetId()
	if res = e.run(t, t.Context(), runReq("orders", "s1", "never mind")); res.status != nil {
		t.Fatalf("superseding message: %v", res.status)
	}
	ledger := func() *servicev1.ListToolCallsResponse {
		return must[*servicev1.ListToolCallsResponse](t)(e.sessions.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
	}
	interim := ledger().GetToolCalls()
	if len(interim) != 1 || interim[0].GetResponseSequence() == 0 {
		t.Fatalf("ledger after the superseding message: %v; want the call closed by its interim result", interim)
	}

	answer := answerCall(t, id, map[string]any{"status": "shipped"})
	if res = e.run(t, t.Context(), answer); res.status != nil {
		t.Fatalf("late answer: %v", res.status)
	}
	sess := must[*servicev1.GetSessionResponse](t)(e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
	var answerSeq uint64
	for _, ev := range sess.GetEvents() {
		for _, p := range ev.GetContent().GetParts() {
			if fr := p.GetFunctionResponse(); fr.GetId() == id && fr.GetResponse().GetFields()["status"].GetStringValue() == "shipped" {
				answerSeq = ev.GetSequence()
			}
		}
	}
	if answerSeq == 0 {
		t.Fatal("the late answer is not stored")
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(answer.GetNewMessage().GetParts()[0].GetFunctionResponse().GetResponse())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	calls := ledger().GetToolCalls()
	if len(calls) != 1 {
		t.Fatalf("ledger: %v; want the one call", calls)
	}
	c := calls[0]
	if c.GetResponseSequence() != answerSeq || c.GetResultDigest() != hex.EncodeToString(sum[:]) {
		t.Errorf("ledger entry answered at #%d with digest %s; want the late answer at #%d, digest %x (the interim result was #%d, %s)",
			c.GetResponseSequence(), c.GetResultDigest(), answerSeq, sum, interim[0].GetResponseSequence(), interim[0].GetResultDigest())
	}
}
