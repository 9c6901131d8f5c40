package boltstore

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// newTestStore opens a store on a fresh file and, at cleanup, closes it and
// runs bbolt's consistency check on the file.
func newTestStore(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		checkFile(t, path)
	})
	return s, path
}

func checkFile(t testing.TB, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("reopen for check: %v", err)
	}
	defer db.Close()
	if err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		checkRunIndexes(t, tx)
		return nil
	}); err != nil {
		t.Fatalf("consistency check: %v", err)
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := newTestStore(t, Options{})
		return s
	})
}

// TestSpendConformance runs the ledger's tests that set the store's clock.
func TestSpendConformance(t *testing.T) {
	storetest.RunSpend(t, func(t *testing.T, now func() time.Time) store.Store {
		s, _ := newTestStore(t, Options{Now: now})
		return s
	})
}

// TestMemoryConformance runs the memory suite that pgstore runs too, so
// that both stores find the same events in the same order.
func TestMemoryConformance(t *testing.T) {
	storetest.RunMemory(t, func(t *testing.T) store.Store {
		s, _ := newTestStore(t, Options{NoSync: true})
		return s
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	st, _ := structpb.NewStruct(map[string]any{"user:name": "ann", "app:v": 1})
	if _, err := s.CreateSession(ctx, k, st); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprint(i)}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SaveArtifact(ctx, k, "f", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "content"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, evs, err := s.GetSession(ctx, k, store.GetOptions{})
	if err != nil || len(evs) != 5 || sess.GetState().AsMap()["user:name"] != "ann" {
		t.Fatalf("after reopen: %v, %d events, %v", sess, len(evs), err)
	}
	if ev, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a"}); err != nil || ev.GetSequence() != 6 {
		t.Fatalf("append after reopen: %v, %v", ev, err)
	}
	if p, _, err := s.LoadArtifact(ctx, k, "f", 1); err != nil || p.GetText() != "content" {
		t.Fatalf("artifact after reopen: %v, %v", p, err)
	}
}

func TestSchemaVersion(t *testing.T) {
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := fresh.SchemaVersion(); err != nil || v != currentSchema {
		t.Fatalf("fresh file has schema %d, %v", v, err)
	}
	fresh.Close()

	// From here on, a file of schema 1 and injected migrations.
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{schema: 1})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A newer binary (one schema ahead of this one) migrates the file with
	// its migrations, in order.
	newer := currentSchema + 1
	var ran, want []string
	var migrations []migration
	for v := 1; v < newer; v++ {
		step := fmt.Sprintf("%d->%d", v, v+1)
		want = append(want, step)
		migrations = append(migrations, func(tx *bbolt.Tx) error {
			if len(ran) != v-1 {
				return fmt.Errorf("migration %s ran after %v", step, ran)
			}
			ran = append(ran, step)
			_, err := tx.CreateBucketIfNotExists([]byte("v" + step))
			return err
		})
	}
	s, err = Open(path, Options{migrations: migrations, schema: newer})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SchemaVersion(); v != newer || strings.Join(ran, ",") != strings.Join(want, ",") {
		t.Fatalf("schema %d after migrations %v, want %d after %v", v, ran, newer, want)
	}
	if _, _, err := s.GetSession(t.Context(), k, store.GetOptions{}); err != nil {
		t.Fatalf("data lost in migration: %v", err)
	}
	s.Close()

	// An older binary refuses a newer file instead of misreading it.
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("old binary opened a newer file: %v", err)
	}
	// A failing migration leaves the file at its old version.
	path2 := filepath.Join(t.TempDir(), "db2")
	s, _ = Open(path2, Options{schema: 1})
	s.Close()
	if _, err := Open(path2, Options{schema: 2, migrations: []migration{func(*bbolt.Tx) error { return errors.New("boom") }}}); err == nil {
		t.Fatal("failed migration opened the store")
	}
	s, err = Open(path2, Options{schema: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != 1 {
		t.Fatalf("failed migration left schema %d", v)
	}
}

func TestFailedWriteDoesNotSinkTheBatch(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	// Drive the committer directly with one batch holding a write that
	// aborts half-way and two good ones.
	results := make([]chan error, 3)
	var batch []*writeOp
	for i := range results {
		results[i] = make(chan error, 1)
		fn := func(tx *bbolt.Tx) error {
			return put(tx.Bucket(bucketMeta), []byte(fmt.Sprint("k", i)), []byte("v"))
		}
		if i == 1 {
			fn = func(tx *bbolt.Tx) error {
				if err := put(tx.Bucket(bucketMeta), []byte("half"), []byte("v")); err != nil {
					return err
				}
				return put(tx.Bucket(bucketMeta), nil, []byte("v")) // empty key: bbolt refuses
			}
		}
		batch = append(batch, &writeOp{fn: fn, done: results[i]})
	}
	s.commit(batch)
	if err := <-results[0]; err != nil {
		t.Fatal(err)
	}
	if err := <-results[1]; err == nil {
		t.Fatal("aborting write reported success")
	}
	if err := <-results[2]; err != nil {
		t.Fatal(err)
	}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m.Get([]byte("k0")) == nil || m.Get([]byte("k2")) == nil {
			return errors.New("good writes lost")
		}
		if m.Get([]byte("half")) != nil {
			return errors.New("half of the failed write was committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeyOrderAndRoundTrip(t *testing.T) {
	strs := []string{"", "\x00", "\x00\x00", "\x00\x01", "a", "a\x00", "a\x00b", "a\x01", "ab", "b", "\xff"}
	for i := range strs {
		for j := range strs {
			a, b := appendString(nil, strs[i]), appendString(nil, strs[j])
			if got, want := bytes.Compare(a, b), strings.Compare(strs[i], strs[j]); got != want {
				t.Errorf("compare(%q, %q) = %d, want %d", strs[i], strs[j], got, want)
			}
			// A one-element tuple never prefixes a different one.
			if i != j && bytes.HasPrefix(b, a) {
				t.Errorf("T(%q) is a prefix of T(%q)", strs[i], strs[j])
			}
		}
		got, rest, err := readString(appendString(nil, strs[i]))
		if err != nil || got != strs[i] || len(rest) != 0 {
			t.Errorf("readString(T(%q)) = %q, %q, %v", strs[i], got, rest, err)
		}
	}
}

func FuzzTupleKeys(f *testing.F) {
	f.Add("app", "user", "a", "b")
	f.Add("", "\x00", "\x00\x01", "\x00\xff")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		ka, kb := appendString(appendString(nil, a1), a2), appendString(appendString(nil, b1), b2)
		want := strings.Compare(a1, b1)
		if want == 0 {
			want = strings.Compare(a2, b2)
		}
		if got := bytes.Compare(ka, kb); got != want {
			t.Fatalf("order of (%q,%q) vs (%q,%q): %d, want %d", a1, a2, b1, b2, got, want)
		}
		x, rest, err := readString(ka)
		if err != nil || x != a1 {
			t.Fatalf("first element %q, %v", x, err)
		}
		if y, rest, err := readString(rest); err != nil || y != a2 || len(rest) != 0 {
			t.Fatalf("second element %q, %v", y, err)
		}
	})
}

// TestKeysGolden pins the on-disk key format: a change here breaks every
// existing file and needs a schema migration. Regenerate with
// UPDATE_GOLDEN=1 only together with one.
func TestKeysGolden(t *testing.T) {
	k := store.SessionKey{App: "app", User: "user\x00x", Session: "s1"}
	nk := artifactNameKey(k, "pic.png")
	memEventID := eventID(&agentrunnerv1.Event{Timestamp: timestamppb.New(time.Unix(0, 1_700_000_000_123456789))}, "s1", 7)
	got := strings.Join([]string{
		"session " + hex.EncodeToString(sessionKey(k)),
		"event " + hex.EncodeToString(eventKey(sessionKey(k), 7)),
		"app_state " + hex.EncodeToString(appStateKey("app")),
		"user_state " + hex.EncodeToString(userStateKey("app", "user\x00x")),
		"artifact " + hex.EncodeToString(artifactVersionKey(nk, 3)),
		"user_artifact " + hex.EncodeToString(artifactVersionKey(artifactNameKey(k, "user:cv.pdf"), 1)),
		"tool_call " + hex.EncodeToString(toolCallKey(sessionKey(k), "call-1")),
		"run " + hex.EncodeToString(runKey(sessionKey(k), 7, 1_700_000_000_123456789, "e-1")),
		"run_before_1970 " + hex.EncodeToString(runKey(sessionKey(k), 7, -1, "e-0")),
		"run_id " + hex.EncodeToString(runIDKey("e-1")),
		"run_record " + hex.EncodeToString(recordKey("e-1")),
		"run_unfinished " + hex.EncodeToString(unfinishedKey("e-1")),
		"run_record_value " + hex.EncodeToString(recordEntry(runKey(sessionKey(k), 7, 1_700_000_000_123456789, "e-1"), []byte{0x0a, 0x03, 'e', '-', '1'})),
		"run_request " + hex.EncodeToString(runRequestKey(sessionKey(k), "req\x001")),
		"run_index " + hex.EncodeToString(indexKey(indexAll, "app", "user\x00x", 1_700_000_000_123456789, "e-1")),
		"run_index_active " + hex.EncodeToString(indexKey(indexActive, "app", "user\x00x", -1, "e-1")),
		"run_index_token " + hex.EncodeToString(indexEntry(indexScope(scopeUser, "app", "user\x00x"), 1_700_000_000_123456789, "e-1")) +
			" " + hex.EncodeToString(indexEntry(indexScope(scopeApp, "app", ""), 1_700_000_000_123456789, "e-1")),
		"memory_segment " + hex.EncodeToString(segmentKey(userStateKey("app", "user\x00x"), "rex", 3)),
		"memory_event_id " + hex.EncodeToString(memEventID),
		"spend " + hex.EncodeToString(spendKey("app", "user\x00x", "2026-11-26", "flash")),
		"spend_all_users " + hex.EncodeToString(spendKey("app", allUsers, "2026-11-26", "flash")),
		"webhook_pending " + hex.EncodeToString(deliveryKey(prefixPending, "e-1.succeeded.7")),
		"webhook_failed " + hex.EncodeToString(deliveryKey(prefixFailed, "e-1.succeeded.7")),
		"schema " + hex.EncodeToString(binary.AppendUvarint(nil, currentSchema)),
	}, "\n") + "\n"
	path := filepath.Join("testdata", "keys.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("key format changed:\n got: %s\nwant: %s", got, want)
	}
}

// TestPatchSessionMatchesDecode: the append of an event that changes no
// session state rewrites last_sequence and update_time in the encoding;
// the record must decode to what decoding, setting both and encoding
// gives, whatever the record held before (state, repeated or missing
// fields, timestamps before 1970).
func TestPatchSessionMatchesDecode(t *testing.T) {
	state, _ := structpb.NewStruct(map[string]any{"topic": "billing", "n": 3, "nested": map[string]any{"a": []any{1, "x"}}})
	full := &agentrunnerv1.Session{
		AppName: "app", UserId: "u", SessionId: "s", State: state,
		CreateTime: timestamppb.New(time.Unix(1_700_000_000, 5)), UpdateTime: timestamppb.New(time.Unix(1_700_000_100, 0)), LastSequence: 41,
		Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 100, CandidatesTokenCount: 20, TotalTokenCount: 120},
		Cost:  &agentrunnerv1.Cost{Currency: "USD", Micros: 300, UnpricedCalls: 2},
	}
	twice := append(mustMarshal(t, &agentrunnerv1.Session{LastSequence: 9, UpdateTime: timestamppb.New(time.Unix(1, 1)), Usage: &agentrunnerv1.UsageMetadata{ThoughtsTokenCount: 5},
		Cost: &agentrunnerv1.Cost{Micros: 1, UnpricedCalls: 1}}), mustMarshal(t, full)...)
	for name, sv := range map[string][]byte{
		"full":               mustMarshal(t, full),
		"empty":              nil,
		"fields twice":       twice,
		"no update_time yet": mustMarshal(t, &agentrunnerv1.Session{AppName: "app", LastSequence: 1}),
	} {
		for _, ts := range []*timestamppb.Timestamp{timestamppb.New(time.Unix(1_800_000_000, 999_999_999)), timestamppb.New(time.Unix(-5, 7)), {}} {
			ev := &agentrunnerv1.Event{UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 7, TotalTokenCount: 9},
				Cost: &agentrunnerv1.Cost{Currency: "USD", Micros: 5, Model: "m"}}
			got, err := patchSession(sv, 42, ts, ev, true)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := &agentrunnerv1.Session{}
			if err := proto.Unmarshal(sv, want); err != nil {
				t.Fatal(err)
			}
			want.LastSequence, want.UpdateTime = 42, ts
			want.Usage = store.AddUsage(want.Usage, ev.GetUsageMetadata())
			want.Cost = store.AddEventCost(want.Cost, ev)
			want.TotalTokens += store.EventTokens(ev)
			dec := &agentrunnerv1.Session{}
			if err := proto.Unmarshal(got, dec); err != nil {
				t.Fatalf("%s: patched record does not decode: %v", name, err)
			}
			if !proto.Equal(dec, want) || lastSequenceOf(got) != 42 {
				t.Fatalf("%s at %v: patched record decodes to %v, want %v", name, ts.AsTime(), dec, want)
			}
		}
	}
	if _, err := patchSession([]byte{0x0a, 0x05, 'a'}, 1, timestamppb.Now(), &agentrunnerv1.Event{}, true); err == nil {
		t.Fatal("a truncated record was patched")
	}
}

// TestMaxItemBytes: an event, a session state, an app or user state or
// an artifact over MaxItemBytes is refused with ErrInvalidArgument naming
// the limit, and nothing of the write is kept.
func TestMaxItemBytes(t *testing.T) {
	s, _ := newTestStore(t, Options{MaxItemBytes: 4096})
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	big := strings.Repeat("x", 5000)
	wantRefused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "limit of 4096 bytes") {
			t.Fatalf("%s: %v, want ErrInvalidArgument naming the limit", what, err)
		}
	}
	_, err := s.CreateSession(ctx, k, mustStructT(t, map[string]any{"note": big}))
	wantRefused("CreateSession with a large state", err)
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		t.Fatalf("CreateSession after the refused one: %v", err)
	}
	text := func(s string) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: "a", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}}
	}
	_, err = s.AppendEvent(ctx, k, text(big))
	wantRefused("a large event", err)
	for _, delta := range []string{"note", "app:note", "user:note"} {
		// Each write alone fits; the state it grows would not.
		for i := range 2 {
			ev := text("ok")
			ev.Actions = &agentrunnerv1.EventActions{StateDelta: mustStructT(t, map[string]any{fmt.Sprint(delta, i): strings.Repeat("y", 2500)})}
			_, err = s.AppendEvent(ctx, k, ev)
			if i == 0 && err != nil {
				t.Fatalf("%s: first delta: %v", delta, err)
			}
		}
		wantRefused("a delta growing "+delta+" past the limit", err)
	}
	_, err = s.SaveArtifact(ctx, k, "a.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: big}})
	wantRefused("a large artifact", err)
	sess, evs, err := s.GetSession(ctx, k, store.GetOptions{})
	if err != nil || len(evs) != 3 || sess.GetLastSequence() != 3 {
		t.Fatalf("session after the refused writes: %d events (last %d), %v; want the 3 that fit", len(evs), sess.GetLastSequence(), err)
	}
	if _, ok := sess.GetState().GetFields()["note1"]; ok {
		t.Fatal("a refused delta was applied")
	}
}

func mustStructT(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	st, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// eventPages returns the share of the events bucket's leaf pages in use,
// how many leaf pages it has and how many of those hold fewer than 5
// keys.
func eventPages(t *testing.T, s *Store) (fill float64, pages, thin int) {
	t.Helper()
	err := s.db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket(bucketEvents).Stats()
		fill, pages = float64(st.LeafInuse)/float64(st.LeafAlloc), st.LeafPageN
		// Every other bucket here has its keys on one page (or inline).
		for id := 2; id < int(tx.Size())/s.db.Info().PageSize; id++ {
			if p, err := tx.Page(id); err == nil && p != nil && p.Type == "leaf" && p.Count < 5 {
				thin++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fill, pages, thin
}

// TestEventsFill checks the events bucket's fill factors (appendFill):
// a lone session's appends leave full pages behind them, and appends
// that land among other sessions' events split pages at half, so that
// the events after them are not pushed out into pages of their own.
func TestEventsFill(t *testing.T) {
	ctx := t.Context()
	appendTo := func(s *Store, k store.SessionKey, n int) {
		t.Helper()
		for i := range n {
			if _, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a", InvocationId: fmt.Sprint("inv-", i),
				Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: strings.Repeat("x", 200)}}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	newSession := func(s *Store, id string) store.SessionKey {
		t.Helper()
		k := store.SessionKey{App: "app", User: "u", Session: id}
		if _, err := s.CreateSession(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
		return k
	}
	t.Run("lone session", func(t *testing.T) {
		s, _ := newTestStore(t, Options{NoSync: true})
		appendTo(s, newSession(s, "s"), 1600)
		// Pages split at half are about 50% in use.
		if fill, pages, _ := eventPages(t, s); fill < 0.75 {
			t.Errorf("a lone session's event pages are %.0f%% in use (%d pages), want at least 75%%", 100*fill, pages)
		}
	})
	t.Run("sessions side by side", func(t *testing.T) {
		s, _ := newTestStore(t, Options{NoSync: true})
		var keys []store.SessionKey
		for i := range 8 {
			keys = append(keys, newSession(s, fmt.Sprint("s", i)))
			appendTo(s, keys[i], 100) // each appended last, so filled
		}
		for range 20 {
			for _, k := range keys[:7] {
				appendTo(s, k, 1) // before the next session's events
			}
		}
		// Split at 95% wherever they land, these appends pushed the next
		// session's first events out, two or three at a time, into pages
		// of their own (17 such pages).
		if _, pages, thin := eventPages(t, s); thin > 7 {
			t.Errorf("%d of %d event pages hold fewer than 5 events, want at most one per session", thin, pages)
		}
	})
}

// TestForkConformance runs the fork and rewind suite that pgstore runs too.
func TestForkConformance(t *testing.T) {
	storetest.RunFork(t, func(t *testing.T) store.Store {
		s, _ := newTestStore(t, Options{})
		return s
	})
}

// TestScheduleConformance runs the schedule store suite that pgstore runs too.
func TestScheduleConformance(t *testing.T) {
	storetest.RunSchedules(t, func(t *testing.T) store.Store {
		s, _ := newTestStore(t, Options{})
		return s
	})
}

// TestWebhookConformance runs the webhook outbox's suite that pgstore
// runs too.
func TestWebhookConformance(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) store.Store {
		s, _ := newTestStore(t, Options{NoSync: true})
		return s
	})
}
