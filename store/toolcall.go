package store

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// The rules of the tool-call ledger, which every store keeps in the
// transaction that appends an event: a function call opens an entry
// (once: a replay changes nothing), its answer closes it. They live here
// so that the stores' ledgers cannot drift apart.

// userAuthor is the author of the caller's events (agent.UserAuthor; the
// store does not import the runner).
const userAuthor = "user"

// OpenToolCall returns the ledger entry that function call fc of ev,
// appended at sequence seq, opens. The store writes it only when the
// ledger has no entry for its id yet.
func OpenToolCall(ev *agentrunnerv1.Event, fc *agentrunnerv1.FunctionCall, seq uint64) *agentrunnerv1.ToolCall {
	return &agentrunnerv1.ToolCall{
		CallId:         fc.GetId(),
		Tool:           fc.GetName(),
		Author:         ev.GetAuthor(),
		InvocationId:   ev.GetInvocationId(),
		ArgsDigest:     digest(fc.GetArgs()),
		CallSequence:   seq,
		CallTime:       ev.GetTimestamp(),
		WaitsForCaller: slices.Contains(ev.GetLongRunningToolIds(), fc.GetId()),
	}
}

// SupersededKey is the key of the interim result the runner stores, as
// the caller's, for a waiting call that a new message or CancelRun
// superseded; its value is the run that did. It lives here so that the
// ledger knows that result (the store does not import the runner).
const SupersededKey = "superseded_by_run"

// CloseToolCall records in rec the answer fr of ev, appended at sequence
// seq, and reports whether it did: any answer closes a call that does not
// wait for the caller, only the caller's one that does (an agent's
// interim response leaves it open); a closed call stays as it is, but for
// one case: the caller's real answer to a waiting call replaces the
// interim result of its superseding, which closed it first. The runner
// takes a second answer to a waiting call only when the first was that
// interim result (a late answer), and events a client appends on its own
// reach no ledger, so a closed waiting call's later real answer is always
// that late one.
func CloseToolCall(rec *agentrunnerv1.ToolCall, ev *agentrunnerv1.Event, fr *agentrunnerv1.FunctionResponse, seq uint64) bool {
	if rec.GetWaitsForCaller() && ev.GetAuthor() != userAuthor {
		return false
	}
	if rec.GetResponseSequence() != 0 && (!rec.GetWaitsForCaller() || isInterim(fr) || seq <= rec.GetResponseSequence()) {
		return false
	}
	rec.ResponseSequence = seq
	rec.ResponseTime = ev.GetTimestamp()
	rec.ResultDigest = digest(fr.GetResponse())
	return true
}

// isInterim reports whether fr is the runner's interim result for a
// superseded call.
func isInterim(fr *agentrunnerv1.FunctionResponse) bool {
	_, ok := fr.GetResponse().GetFields()[SupersededKey]
	return ok
}

// digest is the hex SHA-256 of m's deterministic encoding: the ledger
// keeps digests of arguments and results, not the values, to stay small.
func digest(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
