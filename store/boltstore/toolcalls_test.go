package boltstore

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/structpb"
)

func callPart(id, name string, args map[string]any) *agentrunnerv1.Part {
	s, _ := structpb.NewStruct(args)
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: s}}}
}

func responsePart(id, name string, resp map[string]any) *agentrunnerv1.Part {
	s, _ := structpb.NewStruct(resp)
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: s}}}
}

// ledgerLines renders a ledger as "id tool author call->response" lines.
func ledgerLines(t *testing.T, s *Store, k store.SessionKey) []string {
	t.Helper()
	calls, err := s.ListToolCalls(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range calls {
		line := fmt.Sprintf("%s %s %s #%d->#%d", c.GetCallId(), c.GetTool(), c.GetAuthor(), c.GetCallSequence(), c.GetResponseSequence())
		if c.GetWaitsForCaller() {
			line += " waits"
		}
		if len(c.GetArgsDigest()) != 64 || (c.GetResponseSequence() > 0) != (len(c.GetResultDigest()) == 64) {
			line += " bad-digests"
		}
		out = append(out, line)
	}
	return out
}

// appendLedgerEvents stores a call of a server tool (c1) and of a tool
// the caller executes (c2), the agent's responses (c1's result and an
// interim one for c2), then the caller's answer to c2.
func appendLedgerEvents(t *testing.T, s *Store, k store.SessionKey, answer bool) {
	t.Helper()
	events := []*agentrunnerv1.Event{
		{Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "go"}}}}},
		{Author: "bot", InvocationId: "e-1", LongRunningToolIds: []string{"c2"}, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
			callPart("c1", "lookup", map[string]any{"q": "x"}), callPart("c2", "approve", nil)}}},
		{Author: "bot", InvocationId: "e-1", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{
			responsePart("c1", "lookup", map[string]any{"hit": true}), responsePart("c2", "approve", map[string]any{"status": "pending"})}}},
	}
	if answer {
		events = append(events, &agentrunnerv1.Event{Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{
			responsePart("c2", "approve", map[string]any{"ok": true}), responsePart("c1", "lookup", map[string]any{"again": true}), responsePart("zz", "nope", nil)}}})
	}
	for _, ev := range events {
		if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolCallLedger(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	appendLedgerEvents(t, s, k, false)
	// An interim response leaves a call that waits for the caller open.
	if got, want := ledgerLines(t, s, k), []string{"c1 lookup bot #2->#3", "c2 approve bot #2->#0 waits"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ledger %q, want %q", got, want)
	}
	// The caller's answer closes it; a second answer to c1 and an answer
	// to an unknown call change nothing.
	if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{
		responsePart("c2", "approve", map[string]any{"ok": true}), responsePart("c1", "lookup", map[string]any{"again": true}), responsePart("zz", "nope", nil)}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := ledgerLines(t, s, k), []string{"c1 lookup bot #2->#3", "c2 approve bot #2->#4 waits"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ledger %q, want %q", got, want)
	}
	// Deleting the session deletes its ledger.
	if err := s.DeleteSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if got := ledgerLines(t, s, k); len(got) != 0 {
		t.Fatalf("a recreated session has the old ledger %q", got)
	}
	if _, err := s.ListToolCalls(t.Context(), store.SessionKey{App: "app", User: "u", Session: "none"}); !strings.Contains(fmt.Sprint(err), "not found") {
		t.Fatalf("ledger of a missing session: %v", err)
	}
}

// TestToolCallLedgerAfterRestart: a call stored and never answered (the
// process died while the tool ran) is still open after a restart.
func TestToolCallLedgerAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "bot", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{callPart("c9", "pay", map[string]any{"amount": 10})}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := ledgerLines(t, s, k); strings.Join(got, "|") != "c9 pay bot #1->#0" {
		t.Fatalf("ledger after restart %q", got)
	}
}

// TestToolCallLedgerMigration: a schema 1 file (no ledger) gets its
// ledger built from its events when a schema 2 binary opens it.
func TestToolCallLedgerMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{schema: 1})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	appendLedgerEvents(t, s, k, true)
	// Make it a true schema 1 file: no ledger.
	if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketToolCalls) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d after open", v)
	}
	if got, want := ledgerLines(t, s, k), []string{"c1 lookup bot #2->#3", "c2 approve bot #2->#4 waits"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("migrated ledger %q, want %q", got, want)
	}
}

// TestOnCommit checks the commit hook: every acknowledged write is in one
// reported commit.
func TestOnCommit(t *testing.T) {
	var commits, writes int
	s, _ := newTestStore(t, Options{OnCommit: func(d time.Duration, n int) {
		commits++
		writes += n
		if d <= 0 {
			t.Errorf("commit took %v", d)
		}
	}})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "bot"}); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 4 || commits < 1 || commits > 4 {
		t.Fatalf("%d commits carried %d writes; want the 4 writes", commits, writes)
	}
}
