package boltstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

var testEpoch = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func testRun(k store.SessionKey, id string, minute int, st agentrunnerv1.RunStatus) *agentrunnerv1.Run {
	return &agentrunnerv1.Run{
		RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session, Status: st,
		CreateTime: timestamppb.New(testEpoch.Add(time.Duration(minute) * time.Minute)),
	}
}

// checkRunIndexes checks, on the raw file, that every run record is
// where its fields say and that the indexes name exactly what they must:
// the events bucket every record's run key (and no other), run_requests
// every request_id, the run index ('v' in run_records) every active run;
// and that no unfinished mark ('u', schemas 6 to 9) is left.
func checkRunIndexes(t testing.TB, tx *bbolt.Tx) {
	t.Helper()
	want := map[string]map[string]string{"run_keys": {}, "run_requests": {}, "unfinished_runs": {}, "run_index": {}}
	err := forEachRunRecord(tx, func(key, v []byte) error {
		rec := &agentrunnerv1.Run{}
		if err := proto.Unmarshal(v, rec); err != nil {
			return err
		}
		sk := sessionKey(store.RunKey(rec))
		if tx.Bucket(bucketSessions).Get(sk) == nil {
			return fmt.Errorf("run %s outlives its session", rec.GetRunId())
		}
		if !bytes.HasPrefix(key, sk) || !isRunKey(key, sk) {
			return fmt.Errorf("run %s keyed %x, outside its session %x", rec.GetRunId(), key, sk)
		}
		if id, err := runIDOfKey(key, sk); err != nil || id != rec.GetRunId() || runNanos(key, sk) != rec.GetCreateTime().AsTime().UnixNano() {
			return fmt.Errorf("run %s keyed %x, which says %q, %d (%v)", rec.GetRunId(), key, id, runNanos(key, sk), err)
		}
		want["run_keys"][string(key)] = ""
		if rec.GetRequestId() != "" {
			want["run_requests"][string(runRequestKey(sk, rec.GetRequestId()))] = string(key)
		}
		nanos := runNanos(key, sk)
		// Only active runs are indexed (runindex.go).
		if store.Active(rec.GetStatus()) {
			want["run_index"][string(indexKey(indexActive, rec.GetAppName(), rec.GetUserId(), nanos, rec.GetRunId()))] = ""
		}
		return nil
	})
	if err != nil {
		t.Fatalf("run records: %v", err)
	}
	got := map[string]map[string]string{"run_keys": runKeysOf(t, tx), "run_requests": {}, "unfinished_runs": {}, "run_index": {}}
	_ = tx.Bucket(bucketRunReqs).ForEach(func(k, v []byte) error {
		got["run_requests"][string(k)] = string(v)
		return nil
	})
	_ = tx.Bucket(bucketRunRecords).ForEach(func(k, v []byte) error {
		switch k[0] {
		case unfinishedPrefix[0]:
			got["unfinished_runs"][string(k)] = string(v)
		case indexAll, indexActive:
			got["run_index"][string(k)] = string(v)
		}
		return nil
	})
	for name, entries := range want {
		if fmt.Sprint(got[name]) != fmt.Sprint(entries) {
			t.Fatalf("index %s holds %q, want %q", name, got[name], entries)
		}
	}
}

// runKeysOf returns the run keys of the events bucket: the keys that are
// not T(app, user, session) U(seq). Their values must be empty.
func runKeysOf(t testing.TB, tx *bbolt.Tx) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := tx.Bucket(bucketEvents).ForEach(func(key, v []byte) error {
		rest := key
		for range 3 {
			var err error
			if _, rest, err = readString(rest); err != nil {
				return fmt.Errorf("events key %x: %w", key, err)
			}
		}
		if len(rest) == 8 {
			return nil
		}
		if len(v) != 0 {
			return fmt.Errorf("run key %x holds %d bytes", key, len(v))
		}
		out[string(key)] = ""
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forEachRunRecord calls fn with every run record of the file and the
// run key it names, checking that it is filed under its own run id.
func forEachRunRecord(tx *bbolt.Tx, fn func(key, v []byte) error) error {
	return tx.Bucket(bucketRunRecords).ForEach(func(idKey, _ []byte) error {
		switch {
		case bytes.HasPrefix(idKey, unfinishedPrefix), idKey[0] == indexAll, idKey[0] == indexActive:
			return nil
		case !bytes.HasPrefix(idKey, []byte{'r'}):
			return fmt.Errorf("run_records key %x", idKey)
		}
		id, _, err := readString(idKey[1:])
		if err != nil {
			return fmt.Errorf("run_records key %x: %w", idKey, err)
		}
		key, v, err := storedRun(tx, id)
		if err != nil {
			return err
		}
		rec, err := decodeRun(v)
		if err != nil {
			return err
		}
		if rec.GetRunId() != id {
			return fmt.Errorf("run_records entry %q holds run %s", id, rec.GetRunId())
		}
		return fn(key, v)
	})
}

// rawRun reads a record from the file, past the queue of PutRunLater.
func rawRun(t testing.TB, s *Store, id string) *agentrunnerv1.Run {
	t.Helper()
	var rec *agentrunnerv1.Run
	err := s.db.View(func(tx *bbolt.Tx) error {
		key, v, err := storedRun(tx, id)
		if key == nil || err != nil {
			return err
		}
		rec, err = decodeRun(v)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestRunFieldNumbers(t *testing.T) {
	run := (&agentrunnerv1.Run{}).ProtoReflect().Descriptor().Fields()
	ev := (&agentrunnerv1.Event{}).ProtoReflect().Descriptor().Fields()
	for _, tc := range []struct {
		field protoreflect.FieldDescriptor
		want  int
	}{
		{run.ByName("first_sequence"), runFirstSequenceField},
		{run.ByName("last_sequence"), runLastSequenceField},
		{run.ByName("request_id"), runRequestIDField},
		{run.ByName("status"), runStatusField},
		{ev.ByName("sequence"), eventSequenceField},
	} {
		if tc.field == nil || int(tc.field.Number()) != tc.want {
			t.Errorf("field %v: the store writes it as number %d", tc.field, tc.want)
		}
	}
}

func TestRunKeys(t *testing.T) {
	sk := sessionKey(store.SessionKey{App: "a", User: "u\x00", Session: "s"})
	// By anchor, then in creation order across 1970, ties by run id; each
	// right after the event it is anchored on and before the next.
	keys := []struct {
		anchor uint64
		nanos  int64
		id     string
	}{{0, 5e18, "a"}, {1, -5e18, "z"}, {1, -1, "a"}, {1, 0, "a"}, {1, 0, "a\x00"}, {1, 0, "b"}, {1, 1, ""}, {1, 1_700_000_000_000_000_000, "x"}, {1, 5e18, "a"}, {1 << 40, -1, "a"}}
	for i, k := range keys {
		key := runKey(sk, k.anchor, k.nanos, k.id)
		if id, err := runIDOfKey(key, sk); err != nil || id != k.id || runNanos(key, sk) != k.nanos {
			t.Errorf("key %x decodes to %q, %d, %v; want %q, %d", key, id, runNanos(key, sk), err, k.id, k.nanos)
		}
		if !bytes.HasPrefix(key, sk) || !isRunKey(key, sk) || isRunKey(eventKey(sk, k.anchor), sk) {
			t.Errorf("key %x is outside its session, or taken for an event", key)
		}
		if ev := eventKey(sk, k.anchor); bytes.Compare(ev, key) >= 0 || bytes.Compare(key, eventKey(sk, k.anchor+1)) >= 0 {
			t.Errorf("key of %v is not between events %d and %d", k, k.anchor, k.anchor+1)
		}
		if i > 0 {
			if prev := runKey(sk, keys[i-1].anchor, keys[i-1].nanos, keys[i-1].id); bytes.Compare(prev, key) >= 0 {
				t.Errorf("key of %v does not sort before %v", keys[i-1], k)
			}
		}
	}
	if _, err := runIDOfKey(append(runKey(sk, 0, 0, "a"), 'x'), sk); err == nil {
		t.Error("a key with trailing bytes decoded")
	}
	for _, v := range [][]byte{
		nil,
		mustMarshal(t, &agentrunnerv1.Run{RunId: "x", RequestId: "r\x00q", Status: 2}),
		append(mustMarshal(t, &agentrunnerv1.Run{RequestId: "old", Status: 1}), mustMarshal(t, &agentrunnerv1.Run{RequestId: "new", Status: 4, Usage: &agentrunnerv1.UsageMetadata{TotalTokenCount: 3}})...),
		appendSequences(mustMarshal(t, &agentrunnerv1.Run{Status: 3, Error: &agentrunnerv1.Status{Message: "x"}}), true, 7),
	} {
		want := &agentrunnerv1.Run{}
		_ = proto.Unmarshal(v, want)
		if id, st := requestAndStatusOf(v); id != want.GetRequestId() || st != want.GetStatus() {
			t.Errorf("requestAndStatusOf(%x) = %q, %v; want %q, %v", v, id, st, want.GetRequestId(), want.GetStatus())
		}
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPutRunLaterDurableAfterClose: Close writes the queue; a reopened
// store reads it from the file.
func TestPutRunLaterDurableAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{laterDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(t.Context(), testRun(k, "e-a", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); err != nil {
		t.Fatal(err)
	}
	s.PutRunLater(testRun(k, "e-a", 0, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
	s.PutRunLater(testRun(k, "e-b", 1, agentrunnerv1.RunStatus_RUN_STATUS_PENDING))
	if rec := rawRun(t, s, "e-a"); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
		t.Fatalf("queued record written before Close (delay 1h): %v", rec)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path)
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rec, err := s.GetRun(t.Context(), "e-a"); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("e-a after reopen: %v, %v", rec, err)
	}
	runs, err := s.ListUnfinishedRuns(t.Context())
	if err != nil || len(runs) != 1 || runs[0].GetRunId() != "e-b" {
		t.Fatalf("unfinished runs after reopen: %v, %v", runs, err)
	}
}

// TestPutRunLaterCommits: a queued record rides along with the next
// commit, whatever session it writes to; without one the committer writes
// it after the delay, in a commit of its own. Either way it costs no
// commit per record: records queued within the delay share one.
func TestPutRunLaterCommits(t *testing.T) {
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	var mu sync.Mutex
	var writes []int
	onCommit := func(_ time.Duration, n int) {
		mu.Lock()
		writes = append(writes, n)
		mu.Unlock()
	}
	commits := func() (string, int) {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(writes), len(writes)
	}
	for _, tc := range []struct {
		name  string
		delay time.Duration
		other bool // another session's write comes
		want  string
	}{
		{"rides along", time.Hour, true, "[1 4]"},
		{"alone after the delay", 5 * time.Millisecond, false, "[1 3]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			writes = nil
			mu.Unlock()
			s, _ := newTestStore(t, Options{laterDelay: tc.delay, OnCommit: onCommit})
			if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for _, id := range []string{"e-1", "e-2", "e-3"} {
				s.PutRunLater(testRun(k, id, 0, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
			}
			if tc.other {
				if _, err := s.CreateSession(t.Context(), store.SessionKey{App: "app", User: "u", Session: "t"}, nil); err != nil {
					t.Fatal(err)
				}
				if rawRun(t, s, "e-3") == nil {
					t.Fatal("the next commit left the queued record out")
				}
			}
			for rawRun(t, s, "e-3") == nil {
				if time.Since(start) > 5*time.Second {
					t.Fatal("queued record never written")
				}
				time.Sleep(time.Millisecond)
			}
			if !tc.other && time.Since(start) < tc.delay {
				t.Fatalf("written after %v, before the delay %v", time.Since(start), tc.delay)
			}
			// OnCommit runs just after the commit that the file shows.
			got, n := commits()
			for ; n < 2 && time.Since(start) < 5*time.Second; got, n = commits() {
				time.Sleep(time.Millisecond)
			}
			if got != tc.want {
				t.Fatalf("commits carried %s writes, want %s", got, tc.want)
			}
		})
	}
}

// TestPutRunLaterNeverGoesBack: while records of a run are queued and
// written one after another, a reader never sees an older one after a
// newer one (a record leaves the overlay only once the file shows it).
func TestPutRunLaterNeverGoesBack(t *testing.T) {
	s, _ := newTestStore(t, Options{laterDelay: time.Microsecond, NoSync: true})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	const n = 300
	run := testRun(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	s.PutRunLater(run)
	done := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		var last uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			rec, err := s.GetRun(t.Context(), "e-1")
			if err == nil && rec.GetLastSequence() < last {
				err = fmt.Errorf("read last_sequence %d after %d", rec.GetLastSequence(), last)
			}
			if err != nil {
				errs <- err
				return
			}
			last = rec.GetLastSequence()
		}
	}()
	for i := 1; i <= n; i++ {
		run = proto.CloneOf(run) // the store may keep the one it was given
		run.LastSequence = uint64(i)
		s.PutRunLater(run)
		if i%50 == 0 { // some synchronous writes in between
			if _, err := s.CreateSession(t.Context(), store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("x", i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if rec, err := s.GetRun(t.Context(), "e-1"); err != nil || rec.GetLastSequence() != n {
		t.Fatalf("final record %v, %v", rec, err)
	}
}

// TestPutRunLaterLogs: records that cannot be written are logged, not
// lost silently.
func TestPutRunLaterLogs(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, _ := newTestStore(t, Options{laterDelay: time.Hour, Logger: log})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	held := testRun(k, "e-held", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	held.RequestId = "r1"
	if err := s.PutRun(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	claim := testRun(k, "e-claim", 1, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	claim.RequestId = "r1"
	s.PutRunLater(claim)
	s.PutRunLater(testRun(store.SessionKey{App: "app", User: "u", Session: "gone"}, "e-gone", 0, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
	s.PutRunLater(nil)
	s.PutRunLater(testRun(k, "", 0, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
	// Writes to their sessions carry them (one that fails included).
	if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), store.SessionKey{App: "app", User: "u", Session: "gone"}, &agentrunnerv1.Event{Author: "a"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to a missing session: %v", err)
	}
	logged := buf.String()
	for _, want := range []string{
		`level=ERROR msg="queued run record not written" run=e-claim err="request_id \"r1\" is held by run e-held: already exists"`,
		`level=DEBUG msg="queued run record dropped: its session is gone" run=e-gone`,
		`level=ERROR msg="run record not queued" run="" err="run is missing: invalid argument"`,
		`level=ERROR msg="run record not queued" run="" err="run_id is empty: invalid argument"`,
	} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s\nlog:\n%s", want, logged)
		}
	}
	if rec := rawRun(t, s, "e-claim"); rec != nil {
		t.Fatalf("the refused record was written: %v", rec)
	}
	if _, err := s.GetRun(t.Context(), "e-claim"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused record is still overlaid: %v", err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestQueuedRunsSurviveAbortedBatch: when a write of the batch aborts,
// the queued records are written in a transaction of their own.
func TestQueuedRunsSurviveAbortedBatch(t *testing.T) {
	s, _ := newTestStore(t, Options{laterDelay: time.Hour})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	w, err := prepareRun(testRun(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING))
	if err != nil {
		t.Fatal(err)
	}
	// Queue directly: no timer is set, so it stays out of it.
	s.later.mu.Lock()
	s.later.pending["e-1"] = w
	s.later.mu.Unlock()
	good, bad := make(chan error, 1), make(chan error, 1)
	s.commit([]*writeOp{
		{fn: func(tx *bbolt.Tx) error { return put(tx.Bucket(bucketMeta), []byte("k"), []byte("v")) }, done: good},
		{fn: func(tx *bbolt.Tx) error { return put(tx.Bucket(bucketMeta), nil, []byte("v")) }, done: bad},
	})
	if err := <-good; err != nil {
		t.Fatal(err)
	}
	if err := <-bad; err == nil {
		t.Fatal("aborting write reported success")
	}
	if rec := rawRun(t, s, "e-1"); rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
		t.Fatalf("queued record after an aborted batch: %v", rec)
	}
	if got := s.later.all(); len(got) != 0 {
		t.Fatalf("records still queued after their commit: %v", got)
	}
}

// TestRunIndexesAfterRewrites drives the cases that move index entries
// and checks the raw indexes after each.
func TestRunIndexesAfterRewrites(t *testing.T) {
	s, _ := newTestStore(t, Options{laterDelay: time.Hour})
	ctx := t.Context()
	k, k2 := store.SessionKey{App: "app", User: "u", Session: "s"}, store.SessionKey{App: "app", User: "u", Session: "s2"}
	for _, key := range []store.SessionKey{k, k2} {
		if _, err := s.CreateSession(ctx, key, nil); err != nil {
			t.Fatal(err)
		}
	}
	a := testRun(k, "e-a", 0, agentrunnerv1.RunStatus_RUN_STATUS_PENDING)
	a.RequestId = "r1"
	moved := proto.CloneOf(a)
	moved.CreateTime = timestamppb.New(testEpoch.Add(time.Hour))
	moved.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	renamed := proto.CloneOf(a)
	renamed.RequestId, renamed.Status = "r2", agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	b := testRun(k2, "e-b", 1, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	steps := []struct {
		name string
		do   func() error
	}{
		{"pending with a request", func() error { return s.PutRun(ctx, a) }},
		{"rewritten with another create_time", func() error {
			if err := s.PutRun(ctx, moved); err != nil {
				return err
			}
			if rec := rawRun(t, s, "e-a"); !proto.Equal(rec.GetCreateTime(), a.GetCreateTime()) || rec.GetStatus() != moved.GetStatus() {
				return fmt.Errorf("stored as %v", rec)
			}
			return nil
		}},
		{"request renamed, finished", func() error { return s.PutRun(ctx, renamed) }},
		{"request dropped", func() error { return s.PutRun(ctx, testRun(k, "e-a", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)) }},
		{"another session's run", func() error {
			_, _, err := s.AppendRunEvent(ctx, k2, &agentrunnerv1.Event{Author: "a"}, b)
			return err
		}},
		{"queued and flushed", func() error {
			s.PutRunLater(testRun(k, "e-c", 2, agentrunnerv1.RunStatus_RUN_STATUS_PENDING))
			return s.PutRun(ctx, testRun(k2, "e-d", 3, agentrunnerv1.RunStatus_RUN_STATUS_FAILED))
		}},
		{"session deleted", func() error { return s.DeleteSession(ctx, k) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if err := s.db.View(func(tx *bbolt.Tx) error { checkRunIndexes(t, tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	_ = s.db.View(func(tx *bbolt.Tx) error {
		return forEachRunRecord(tx, func([]byte, []byte) error { n++; return nil })
	})
	if n != 2 {
		t.Fatalf("%d run records left, want the 2 of %s", n, k2)
	}
}

// TestRunsMigration: a schema 2 file (no run buckets) opens as schema 3
// with its data, and takes run records.
func TestRunsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{schema: 2, migrations: schemaMigrations[:1]})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "a"}); err != nil {
		t.Fatal(err)
	}
	// Make it a true schema 2 file: no run buckets.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketRunRecords, bucketRunReqs} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d after open, want %d", v, currentSchema)
	}
	if _, evs, err := s.GetSession(t.Context(), k, store.GetOptions{}); err != nil || len(evs) != 1 {
		t.Fatalf("session after migration: %d events, %v", len(evs), err)
	}
	if runs, err := s.ListUnfinishedRuns(t.Context()); err != nil || len(runs) != 0 {
		t.Fatalf("unfinished runs of a migrated file: %v, %v", runs, err)
	}
	if _, run, err := s.AppendRunEvent(t.Context(), k, &agentrunnerv1.Event{Author: "a"}, testRun(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); err != nil || run.GetFirstSequence() != 2 {
		t.Fatalf("AppendRunEvent on a migrated file: %v, %v", run, err)
	}
}

// TestQueuedRecordVisibleWhileCommitting: while the transaction that
// writes a queued record runs, a read (whose transaction cannot see it
// yet) still gets it from the queue.
func TestQueuedRecordVisibleWhileCommitting(t *testing.T) {
	s, _ := newTestStore(t, Options{laterDelay: time.Hour})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(t.Context(), testRun(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); err != nil {
		t.Fatal(err)
	}
	w, err := prepareRun(testRun(k, "e-1", 0, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED))
	if err != nil {
		t.Fatal(err)
	}
	s.later.mu.Lock()
	s.later.pending["e-1"] = w // no timer: the commit below takes it
	s.later.mu.Unlock()
	type read struct{ file, store *agentrunnerv1.Run }
	var got read
	done := make(chan error, 1)
	s.commit([]*writeOp{{done: done, fn: func(*bbolt.Tx) error {
		reads := make(chan read, 1)
		go func() {
			rec, _ := s.GetRun(t.Context(), "e-1")
			reads <- read{file: rawRun(t, s, "e-1"), store: rec}
		}()
		select {
		case got = <-reads:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("read blocked by the write transaction")
		}
	}}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got.file.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
		t.Fatalf("the file showed %v before the commit", got.file.GetStatus())
	}
	if got.store.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("GetRun during the commit = %v, want the queued record", got.store)
	}
}

// TestRunCreateTimes: a create_time before 1970 sorts before later ones;
// one that nanoseconds since 1970 cannot hold is refused.
func TestRunCreateTimes(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for id, at := range map[string]time.Time{
		"e-1900": time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		"e-1969": time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		"e-1970": time.Unix(0, 0),
		"e-2200": time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		run := testRun(k, id, 0, agentrunnerv1.RunStatus_RUN_STATUS_PENDING)
		run.CreateTime = timestamppb.New(at)
		if err := s.PutRun(t.Context(), run); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := s.ListRuns(t.Context(), k, store.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.GetRunId())
	}
	if strings.Join(ids, " ") != "e-2200 e-1970 e-1969 e-1900" {
		t.Fatalf("ListRuns order %v", ids)
	}
	unf, err := s.ListUnfinishedRuns(t.Context())
	if err != nil || len(unf) != 4 || unf[0].GetRunId() != "e-1900" || unf[3].GetRunId() != "e-2200" {
		t.Fatalf("ListUnfinishedRuns = %v, %v", unf, err)
	}
	for _, at := range []time.Time{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		run := testRun(k, "e-far", 0, agentrunnerv1.RunStatus_RUN_STATUS_PENDING)
		run.CreateTime = timestamppb.New(at)
		if err := s.PutRun(t.Context(), run); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("PutRun with create_time %v: %v, want invalid argument", at, err)
		}
	}
}

// TestRunsIntoEventsMigration: a schema 3 file, whose records sit in
// bucket runs under T(app, user, session) U(create_time) T(run_id), opens
// as schema 4 with every record in the events bucket, the indexes
// pointing at the new keys, and every read answering as before.
func TestRunsIntoEventsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{schema: 3, migrations: schemaMigrations[:2]})
	if err != nil {
		t.Fatal(err)
	}
	k, k2 := store.SessionKey{App: "app", User: "u", Session: "s"}, store.SessionKey{App: "app", User: "u", Session: "t"}
	for _, key := range []store.SessionKey{k, k2} {
		if _, err := s.CreateSession(t.Context(), key, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	done := testRun(k, "e-done", 1, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	done.FirstSequence, done.LastSequence, done.RequestId = 2, 3, "ra"
	queued := testRun(k, "e-queued", 2, agentrunnerv1.RunStatus_RUN_STATUS_PENDING)
	queued.RequestId = "rq"
	running := testRun(k2, "e-running", 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	err = s.db.Update(func(tx *bbolt.Tx) error {
		runs, err := tx.CreateBucket(bucketRunsV3)
		if err != nil {
			return err
		}
		// Open made the buckets of today's layout; a schema 3 file has
		// run_ids and unfinished_runs.
		for _, b := range [][]byte{bucketRunIDsV5, bucketUnfinishedV5} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		for _, rec := range []*agentrunnerv1.Run{done, queued, running} {
			sk := sessionKey(store.RunKey(rec))
			oldKey := appendString(appendUint64(bytes.Clone(sk), uint64(rec.GetCreateTime().AsTime().UnixNano())^1<<63), rec.GetRunId())
			puts := []struct {
				b    *bbolt.Bucket
				k, v []byte
			}{{runs, oldKey, mustMarshal(t, rec)}, {tx.Bucket(bucketRunIDsV5), runIDKey(rec.GetRunId()), oldKey}}
			if rec.GetRequestId() != "" {
				puts = append(puts, struct {
					b    *bbolt.Bucket
					k, v []byte
				}{tx.Bucket(bucketRunReqs), runRequestKey(sk, rec.GetRequestId()), oldKey})
			}
			if unfinished(rec.GetStatus()) {
				puts = append(puts, struct {
					b    *bbolt.Bucket
					k, v []byte
				}{tx.Bucket(bucketUnfinishedV5), oldKey, []byte{}})
			}
			for _, p := range puts {
				if err := p.b.Put(p.k, p.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = openMigrated(t, path, bucketRunsV3, bucketRunIDsV5, bucketUnfinishedV5)
	for _, want := range []*agentrunnerv1.Run{done, queued, running} {
		wantSameRun(t, getRunOf(t, s, want.GetRunId()), want)
	}
	if list, _, err := s.ListRuns(t.Context(), k, store.Page{}); err != nil || runIDList(list) != "e-queued e-done" {
		t.Fatalf("ListRuns after migration = %s, %v", runIDList(list), err)
	}
	if got, err := s.FindRunByRequest(t.Context(), k, "ra"); err != nil || got.GetRunId() != "e-done" {
		t.Fatalf("FindRunByRequest(ra) after migration = %v, %v", got, err)
	}
	if list, err := s.ListUnfinishedRuns(t.Context()); err != nil || runIDList(list) != "e-running e-queued" {
		t.Fatalf("ListUnfinishedRuns after migration = %s, %v", runIDList(list), err)
	}
	if _, evs, err := s.GetSession(t.Context(), k, store.GetOptions{}); err != nil || len(evs) != 3 {
		t.Fatalf("session after migration: %d events, %v", len(evs), err)
	}
	if err := s.DeleteSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	_ = s.db.View(func(tx *bbolt.Tx) error { checkRunIndexes(t, tx); return nil })
}

// openMigrated opens the file at path, which must migrate to the current
// schema and lose the buckets gone, and checks its run indexes. The store
// is closed when the test ends.
func openMigrated(t *testing.T, path string, gone ...[]byte) *Store {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d after open, want %d", v, currentSchema)
	}
	_ = s.db.View(func(tx *bbolt.Tx) error {
		for _, b := range gone {
			if tx.Bucket(b) != nil {
				t.Errorf("bucket %s is still there", b)
			}
		}
		checkRunIndexes(t, tx)
		return nil
	})
	return s
}

func getRunOf(t *testing.T, s *Store, id string) *agentrunnerv1.Run {
	t.Helper()
	r, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRun(%s): %v", id, err)
	}
	return r
}

func wantSameRun(t *testing.T, got, want *agentrunnerv1.Run) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("run %s = %v, want %v", want.GetRunId(), got, want)
	}
}

func runIDList(list []*agentrunnerv1.Run) string {
	ids := make([]string, len(list))
	for i, r := range list {
		ids[i] = r.GetRunId()
	}
	return strings.Join(ids, " ")
}

// TestRunRecordsMigration: a schema 5 file written by the code of that
// schema (testdata/schema5-runs.db: a finished run with a request id and
// a run left RUNNING in session s1, a PENDING run with a request id in
// s2) opens as schema 6 with every record in run_records, the indexes
// rebuilt, and every read answering as before; it then takes writes.
func TestRunRecordsMigration(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "schema5-runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openMigrated(t, path, bucketRunIDsV5, bucketUnfinishedV5)
	s1, s2 := store.SessionKey{App: "app", User: "u", Session: "s1"}, store.SessionKey{App: "app", User: "u", Session: "s2"}
	for id, want := range map[string]string{"e-a": "RUN_STATUS_SUCCEEDED 1 2 req-a", "e-b": "RUN_STATUS_RUNNING 3 3 ", "e-c": "RUN_STATUS_PENDING 0 0 req-c"} {
		r := getRunOf(t, s, id)
		if got := fmt.Sprint(r.GetStatus(), " ", r.GetFirstSequence(), " ", r.GetLastSequence(), " ", r.GetRequestId()); got != want {
			t.Errorf("run %s after migration: %s, want %s", id, got, want)
		}
	}
	if list, _, err := s.ListRuns(t.Context(), s1, store.Page{}); err != nil || runIDList(list) != "e-b e-a" {
		t.Fatalf("ListRuns(s1) after migration = %s, %v", runIDList(list), err)
	}
	if list, err := s.ListUnfinishedRuns(t.Context()); err != nil || runIDList(list) != "e-b e-c" {
		t.Fatalf("ListUnfinishedRuns after migration = %s, %v", runIDList(list), err)
	}
	for k, req := range map[store.SessionKey]string{s1: "req-a", s2: "req-c"} {
		if got, err := s.FindRunByRequest(t.Context(), k, req); err != nil || got.GetRequestId() != req {
			t.Fatalf("FindRunByRequest(%s) after migration = %v, %v", req, got, err)
		}
	}
	if _, evs, err := s.GetSession(t.Context(), s1, store.GetOptions{}); err != nil || len(evs) != 3 {
		t.Fatalf("s1 after migration: %d events, %v", len(evs), err)
	}
	// The run left RUNNING ends; a new run starts.
	done := getRunOf(t, s, "e-b")
	done.Status = agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	if _, _, err := s.AppendRunEvent(t.Context(), s1, &agentrunnerv1.Event{Author: "root"}, done); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AppendRunEvent(t.Context(), s1, &agentrunnerv1.Event{Author: "user"}, testRun(s1, "e-d", 4, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ListUnfinishedRuns(t.Context()); err != nil || runIDList(list) != "e-c e-d" {
		t.Fatalf("ListUnfinishedRuns after writes = %s, %v", runIDList(list), err)
	}
	_ = s.db.View(func(tx *bbolt.Tx) error { checkRunIndexes(t, tx); return nil })
	if err := s.DeleteSession(t.Context(), s1); err != nil {
		t.Fatal(err)
	}
	_ = s.db.View(func(tx *bbolt.Tx) error { checkRunIndexes(t, tx); return nil })
	if _, err := s.GetRun(t.Context(), "e-a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun(e-a) after its session's deletion: %v", err)
	}
}

// TestRunRecordsCorrupt: a run_records entry whose framing is broken, or
// an unfinished mark with no record, is a clear error from every read
// that meets it, never a panic or a silent gap.
func TestRunRecordsCorrupt(t *testing.T) {
	// Not newTestStore: its cleanup checks the indexes this test breaks.
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRun(t.Context(), testRun(k, "e-1", 1, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)); err != nil {
		t.Fatal(err)
	}
	corrupt := func(key, v []byte) {
		t.Helper()
		if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketRunRecords).Put(key, v) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range [][]byte{{}, {0x00}, {0x7f, 'x'}} {
		corrupt(recordKey("e-1"), v)
		if _, err := s.GetRun(t.Context(), "e-1"); err == nil || !strings.Contains(err.Error(), "corrupt run_records entry") {
			t.Errorf("GetRun of entry %x: %v", v, err)
		}
		if _, _, err := s.ListRuns(t.Context(), k, store.Page{}); err == nil {
			t.Errorf("ListRuns over entry %x: no error", v)
		}
	}
	corrupt(indexKey(indexActive, k.App, k.User, 1, "e-gone"), []byte{})
	if _, err := s.ListUnfinishedRuns(t.Context()); err == nil || !strings.Contains(err.Error(), "e-gone") {
		t.Fatalf("ListUnfinishedRuns with an active entry of no record: %v", err)
	}
}

// TestAppendRunEventFailsWhole checks that an AppendRunEvent whose event
// fails inside the transaction (the app state it sets outgrows the item
// limit) leaves nothing of the run: not its key in the session's list,
// which goes first, nor its record; alone, and in a batch whose other
// writes still commit.
func TestAppendRunEventFailsWhole(t *testing.T) {
	ctx := t.Context()
	s, _ := newTestStore(t, Options{MaxItemBytes: 500, NoSync: true})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	setApp := func(n int) *agentrunnerv1.Event {
		delta, _ := structpb.NewStruct(map[string]any{fmt.Sprint("app:k", n): strings.Repeat("v", 300)})
		return &agentrunnerv1.Event{Author: "a", Actions: &agentrunnerv1.EventActions{StateDelta: delta}}
	}
	if _, err := s.AppendEvent(ctx, k, setApp(1)); err != nil {
		t.Fatal(err)
	}
	// The second key takes the app state over 500 bytes.
	if _, _, err := s.AppendRunEvent(ctx, k, setApp(2), testRun(k, "e-alone", 1, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("AppendRunEvent over the limit = %v, want ErrInvalidArgument", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				_, _, errs[i] = s.AppendRunEvent(ctx, k, setApp(3), testRun(k, "e-batched", 2, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING))
				return
			}
			_, errs[i] = s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a"})
		}()
	}
	wg.Wait()
	if !errors.Is(errs[0], store.ErrInvalidArgument) {
		t.Fatalf("batched AppendRunEvent over the limit = %v, want ErrInvalidArgument", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Fatalf("append %d beside it: %v", i+1, err)
		}
	}
	for _, id := range []string{"e-alone", "e-batched"} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRun(%s) = %v, want ErrNotFound", id, err)
		}
	}
	if list, _, err := s.ListRuns(ctx, k, store.Page{}); err != nil || len(list) != 0 {
		t.Errorf("ListRuns = %v, %v, want none", runIDList(list), err)
	}
	sess, _, err := s.GetSession(ctx, k, store.GetOptions{})
	if err != nil || sess.GetLastSequence() != 8 {
		t.Fatalf("session after the failed writes: last_sequence %d, %v; want 8", sess.GetLastSequence(), err)
	}
	if err := s.db.View(func(tx *bbolt.Tx) error { checkRunIndexes(t, tx); return nil }); err != nil {
		t.Fatal(err)
	}
}

// newestFirst returns the ids of runs by create_time descending, ties by
// id descending: the order of ListRunsOf across sessions.
// createdFirst lists runs in ListUnfinishedRuns' order (ids break no tie
// of the runs it is given).
func createdFirst(runs ...*agentrunnerv1.Run) string {
	slices.SortFunc(runs, func(a, b *agentrunnerv1.Run) int {
		return a.GetCreateTime().AsTime().Compare(b.GetCreateTime().AsTime())
	})
	return runIDList(runs)
}

func newestFirst(runs ...*agentrunnerv1.Run) string {
	slices.SortFunc(runs, func(a, b *agentrunnerv1.Run) int {
		return cmp.Or(b.GetCreateTime().AsTime().Compare(a.GetCreateTime().AsTime()), strings.Compare(b.GetRunId(), a.GetRunId()))
	})
	return runIDList(runs)
}

// TestRunIndexMigration: files written before the run index (schema 5 by
// the code of that schema, and schema 6) open with the index built from
// their records: ListRunsOf lists them across sessions, the active ones
// apart, and the index then follows new writes.
func TestRunIndexMigration(t *testing.T) {
	t.Run("schema5", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("testdata", "schema5-runs.db"))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s := openMigrated(t, path)
		a, bb, c := getRunOf(t, s, "e-a"), getRunOf(t, s, "e-b"), getRunOf(t, s, "e-c")
		wantAcross(t, s, store.RunFilter{App: "app", User: "u"}, newestFirst(a, bb, c))
		wantAcross(t, s, store.RunFilter{App: "app", Statuses: []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}}, newestFirst(bb, c))
		wantUnfinished(t, s, createdFirst(bb, c))
	})
	t.Run("schema6", func(t *testing.T) {
		s, path := newTestStore(t, Options{})
		k1, k2 := store.SessionKey{App: "app", User: "u", Session: "s1"}, store.SessionKey{App: "app", User: "u", Session: "s2"}
		for _, k := range []store.SessionKey{k1, k2} {
			if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []*agentrunnerv1.Run{
			testRun(k1, "e-1", 1, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED),
			testRun(k2, "e-2", 2, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED),
			testRun(k1, "e-3", 3, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING),
		} {
			if err := s.PutRun(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		// What a schema 6 binary leaves: no run index entries.
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			if err := deleteRunIndex(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySchemaVersion, binary.AppendUvarint(nil, 6))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		s = openMigrated(t, path)
		active := []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED}
		wantAcross(t, s, store.RunFilter{App: "app", User: "u"}, "e-3 e-2 e-1")
		wantAcross(t, s, store.RunFilter{App: "app", User: "u", Statuses: active}, "e-3 e-2")
		wantUnfinished(t, s, "e-3")
		end := testRun(k1, "e-3", 3, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
		if err := s.PutRun(t.Context(), end); err != nil {
			t.Fatal(err)
		}
		wantAcross(t, s, store.RunFilter{App: "app", Statuses: active}, "e-2")
		wantUnfinished(t, s, "")
	})
}

// TestUnfinishedMarksMigration: a schema 9 file, which kept a mark ('u'
// T(run_id)) beside each PENDING or RUNNING run, opens without them
// (checkRunIndexes, at Close), and ListUnfinishedRuns lists the same runs
// from the run index, before and after their ends.
func TestUnfinishedMarksMigration(t *testing.T) {
	s, path := newTestStore(t, Options{})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	runs := []*agentrunnerv1.Run{
		testRun(k, "e-1", 1, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED),
		testRun(k, "e-2", 2, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED),
		testRun(k, "e-3", 3, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING),
		testRun(k, "e-4", 4, agentrunnerv1.RunStatus_RUN_STATUS_PENDING),
	}
	for _, r := range runs {
		if err := s.PutRun(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// What a schema 9 binary leaves: the marks of e-3 and e-4.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, id := range []string{"e-3", "e-4"} {
			if err := tx.Bucket(bucketRunRecords).Put(unfinishedKey(id), []byte{}); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, binary.AppendUvarint(nil, 9))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s = openMigrated(t, path)
	wantUnfinished(t, s, "e-3 e-4")
	for _, id := range []string{"e-3", "e-4"} {
		n := map[string]int{"e-3": 3, "e-4": 4}[id]
		if err := s.PutRun(t.Context(), testRun(k, id, n, agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED)); err != nil {
			t.Fatal(err)
		}
	}
	wantUnfinished(t, s, "")
}

// wantUnfinished checks ListUnfinishedRuns, oldest first.
func wantUnfinished(t *testing.T, s *Store, want string) {
	t.Helper()
	list, err := s.ListUnfinishedRuns(t.Context())
	if err != nil || runIDList(list) != want {
		t.Fatalf("ListUnfinishedRuns = %s, %v; want %s", runIDList(list), err, want)
	}
}

// deleteRunIndex deletes every run index entry of run_records, and fails
// when there is none: the migration would then have nothing to build.
func deleteRunIndex(tx *bbolt.Tx) error {
	var keys [][]byte
	c := tx.Bucket(bucketRunRecords).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if k[0] == indexAll || k[0] == indexActive {
			keys = append(keys, bytes.Clone(k))
		}
	}
	if len(keys) == 0 {
		return errors.New("no run index entries to delete")
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketRunRecords).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func wantAcross(t *testing.T, s *Store, f store.RunFilter, want string) {
	t.Helper()
	list, next, err := s.ListRunsOf(t.Context(), f, store.Page{})
	if err != nil || next != "" || runIDList(list) != want {
		t.Fatalf("ListRunsOf(%+v) = %s, %q, %v; want %s", f, runIDList(list), next, err, want)
	}
}
