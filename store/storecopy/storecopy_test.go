package storecopy_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
	"github.com/agentrunner/agentrunner/store/storecopy"
	"github.com/agentrunner/agentrunner/store/storecopy/copytest"
)

// pg is this test binary's PostgreSQL cluster.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

func openBolt(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openPG(t testing.TB, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func copyAll(t testing.TB, src storecopy.Source, dst storecopy.Target, opts storecopy.Options) storecopy.Report {
	t.Helper()
	rep, err := storecopy.Copy(t.Context(), src, dst, opts)
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	return rep
}

func verify(t testing.TB, src, dst storecopy.Source, n int) storecopy.Verification {
	t.Helper()
	v, err := storecopy.Verify(t.Context(), src, dst, 7)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if v.Sessions != n {
		t.Fatalf("Verify compared %d sessions, want %d", v.Sessions, n)
	}
	return v
}

// checksums returns every session's checksum, exported from s.
func checksums(t testing.TB, s storecopy.Source, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range n {
		sess, err := s.ExportSession(t.Context(), copytest.Key(i))
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = storecopy.Checksum(sess); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func equalChecksums(t testing.TB, what string, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: session %s has checksum %s, want %s", what, copytest.Key(i), got[i], want[i])
		}
	}
}

// TestCopyBoltPostgresBolt: a bbolt store filled through the store API,
// copied to PostgreSQL and from there to a new bbolt file: Verify passes
// at each step, every session's checksum is the same in the three
// stores, and the store API reads the same records from each.
func TestCopyBoltPostgresBolt(t *testing.T) {
	const n = 30
	src := openBolt(t, filepath.Join(t.TempDir(), "src.db"))
	copytest.Fill(t, src, n, 4)
	want := copytest.Dump(t, src, n)
	sums := checksums(t, src, n)

	mid := openPG(t, pg.URL(t))
	rep := copyAll(t, src, mid, storecopy.Options{PageSize: 8})
	if rep.Copied != n || rep.Present != 0 || rep.Events != n*7 || rep.Runs != 2*n || rep.ToolCalls != 2*n {
		t.Fatalf("bolt to PostgreSQL: %+v", rep)
	}
	v := verify(t, src, mid, n)
	t.Logf("bolt to PostgreSQL: %+v; verified %+v", rep, v)
	equalChecksums(t, "PostgreSQL", checksums(t, mid, n), sums)
	copytest.Equal(t, "PostgreSQL read back", copytest.Dump(t, mid, n), want)

	back := openBolt(t, filepath.Join(t.TempDir(), "back.db"))
	copyAll(t, mid, back, storecopy.Options{PageSize: 500})
	verify(t, mid, back, n)
	verify(t, src, back, n)
	equalChecksums(t, "bolt again", checksums(t, back, n), sums)
	copytest.Equal(t, "bolt again read back", copytest.Dump(t, back, n), want)
}

// TestCopyResumeCopiesNothingTwice: a second copy into a full target is
// refused without Resume; with it, every session is found present and
// nothing is written (the target's row counts stay those of the source).
func TestCopyResumeCopiesNothingTwice(t *testing.T) {
	const n = 12
	src := openBolt(t, filepath.Join(t.TempDir(), "src.db"))
	copytest.Fill(t, src, n, 2)
	url := pg.URL(t)
	dst := openPG(t, url)
	copyAll(t, src, dst, storecopy.Options{})
	before := pgCounts(t, url)

	if _, err := storecopy.Copy(t.Context(), src, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrTargetNotEmpty) {
		t.Fatalf("a second copy without Resume: %v, want ErrTargetNotEmpty", err)
	}
	rep := copyAll(t, src, dst, storecopy.Options{Resume: true})
	if rep.Copied != 0 || rep.Present != n || rep.Events != 0 {
		t.Fatalf("resumed copy of a whole target: %+v, want %d present and nothing copied", rep, n)
	}
	verify(t, src, dst, n)
	if after := pgCounts(t, url); after != before {
		t.Fatalf("rows after the resumed copy %s, before %s", after, before)
	}
	if want := boltCounts(t, src, n); before != want {
		t.Fatalf("PostgreSQL holds %s, the source %s", before, want)
	}
}

// TestCopyRefusesNonEmptyTarget: a target holding one session, or only
// shared records (an app's state), is refused and left as it was.
func TestCopyRefusesNonEmptyTarget(t *testing.T) {
	src := openBolt(t, filepath.Join(t.TempDir(), "src.db"))
	copytest.Fill(t, src, 3, 1)
	for _, name := range []string{"session", "app state"} {
		t.Run(name, func(t *testing.T) {
			dst := openBolt(t, filepath.Join(t.TempDir(), "dst.db"))
			k := store.SessionKey{App: "alpha", User: "zed", Session: "mine"}
			var st *structpb.Struct
			if name == "app state" {
				st, _ = structpb.NewStruct(map[string]any{"app:flag": true})
			}
			if _, err := dst.CreateSession(t.Context(), k, st); err != nil {
				t.Fatal(err)
			}
			if name == "app state" {
				if err := dst.DeleteSession(t.Context(), k); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := storecopy.Copy(t.Context(), src, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrTargetNotEmpty) {
				t.Fatalf("copy into a target with %s: %v, want ErrTargetNotEmpty", name, err)
			}
			keys, err := dst.SessionKeys(t.Context(), store.SessionKey{}, 10)
			if err != nil || len(keys) > 1 {
				t.Fatalf("the refused target holds %v, %v", keys, err)
			}
		})
	}
}

// TestCopyInterruptedThenResumed: a copy cancelled after its first page
// (a session half way through the next) is resumed from its checkpoint:
// the two copies together wrote every session once.
func TestCopyInterruptedThenResumed(t *testing.T) {
	const n, pageSize = 25, 6
	dir := t.TempDir()
	src := openBolt(t, filepath.Join(dir, "src.db"))
	copytest.Fill(t, src, n, 2)
	dst := openBolt(t, filepath.Join(dir, "dst.db"))
	cp := filepath.Join(dir, "checkpoint")

	ctx, cancel := context.WithCancel(t.Context())
	pages := 0
	first, err := storecopy.Copy(ctx, src, dst, storecopy.Options{Checkpoint: cp, PageSize: pageSize, Progress: func(storecopy.Report) {
		if pages++; pages == 2 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted copy: %v (%+v), want context.Canceled", err, first)
	}
	if _, err := os.Stat(cp); err != nil {
		t.Fatalf("no checkpoint after two pages: %v", err)
	}
	second := copyAll(t, src, dst, storecopy.Options{Checkpoint: cp, PageSize: pageSize, Resume: true})
	if first.Copied+second.Copied != n || first.Events+second.Events != n*7 {
		t.Fatalf("the copies wrote %d and %d sessions (%d and %d events), want %d in all", first.Copied, second.Copied, first.Events, second.Events, n)
	}
	verify(t, src, dst, n)
	if got, want := boltCounts(t, dst, n), boltCounts(t, src, n); got != want {
		t.Fatalf("target holds %s, source %s", got, want)
	}
}

// counts are a store's records of the kinds a copy could write twice.
type counts struct{ sessions, events, runs, artifacts, calls int }

func (c counts) String() string {
	return "sessions " + strconv.Itoa(c.sessions) + " events " + strconv.Itoa(c.events) + " runs " + strconv.Itoa(c.runs) +
		" artifact versions " + strconv.Itoa(c.artifacts) + " tool calls " + strconv.Itoa(c.calls)
}

// boltCounts counts through the store API.
func boltCounts(t testing.TB, s storecopy.Source, n int) counts {
	t.Helper()
	var c counts
	for i := range n {
		sess, err := s.ExportSession(t.Context(), copytest.Key(i))
		if err != nil {
			t.Fatal(err)
		}
		c.sessions++
		c.events += len(sess.Events)
		c.runs += len(sess.Runs)
		c.artifacts += len(sess.Artifacts)
		c.calls += len(sess.ToolCalls)
	}
	return c
}

// pgCounts counts PostgreSQL's rows (session-scoped artifacts only).
func pgCounts(t testing.TB, url string) counts {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var c counts
	err = conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events), (SELECT count(*) FROM runs),
		(SELECT count(*) FROM artifacts WHERE scope <> ''), (SELECT count(*) FROM tool_calls)`).Scan(&c.sessions, &c.events, &c.runs, &c.artifacts, &c.calls)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVerifyFindsDifferences: a copy changed in one record afterwards
// (an event's bytes in PostgreSQL, an artifact version, a run's status, a
// user's state, a session more) fails Verify, which names what differs.
func TestVerifyFindsDifferences(t *testing.T) {
	const n = 6
	src := openBolt(t, filepath.Join(t.TempDir(), "src.db"))
	copytest.Fill(t, src, n, 2)
	k := copytest.Key(3)
	changes := []struct {
		name, want string
		change     func(t *testing.T, dst *pgstore.Store, url string)
	}{
		{"event bytes", k.Session, func(t *testing.T, _ *pgstore.Store, url string) { corruptEvent(t, url, k, 2) }},
		{"artifact version", k.Session, func(t *testing.T, dst *pgstore.Store, _ string) {
			if err := dst.DeleteArtifact(t.Context(), k, "notes.txt", 1); err != nil {
				t.Fatal(err)
			}
		}},
		{"run status", k.Session, func(t *testing.T, dst *pgstore.Store, _ string) {
			run, err := dst.GetRun(t.Context(), "run-3-b")
			if err != nil {
				t.Fatal(err)
			}
			run.Status = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
			if err := dst.PutRun(t.Context(), run); err != nil {
				t.Fatal(err)
			}
		}},
		{"user state", "shared records differ", func(t *testing.T, dst *pgstore.Store, _ string) {
			// A session created with the state and deleted: the user's
			// state stays, no session is left to differ.
			other := store.SessionKey{App: k.App, User: k.User, Session: "passing"}
			if _, err := dst.CreateSession(t.Context(), other, must(structpb.NewStruct(map[string]any{"user:lang": "klingon"}))); err != nil {
				t.Fatal(err)
			}
			if err := dst.DeleteSession(t.Context(), other); err != nil {
				t.Fatal(err)
			}
		}},
		{"extra session", "s000000x", func(t *testing.T, dst *pgstore.Store, _ string) {
			if _, err := dst.CreateSession(t.Context(), store.SessionKey{App: "alpha", User: "ann", Session: "s000000x"}, nil); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			url := pg.URL(t)
			dst := openPG(t, url)
			copyAll(t, src, dst, storecopy.Options{})
			verify(t, src, dst, countSessions(t, src))
			c.change(t, dst, url)
			_, err := storecopy.Verify(t.Context(), src, dst, 4)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify after a changed %s: %v, want an error naming %q", c.name, err, c.want)
			}
		})
	}
}

func countSessions(t testing.TB, s storecopy.Source) int {
	t.Helper()
	keys, err := s.SessionKeys(t.Context(), store.SessionKey{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// corruptEvent changes event seq's stored text in PostgreSQL by SQL, as a
// bad disk or a botched copy would, behind the store's back.
func corruptEvent(t *testing.T, url string, k store.SessionKey, seq int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var b []byte
	where := ` WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND sequence = $4`
	if err := conn.QueryRow(t.Context(), `SELECT record FROM events`+where, k.App, k.User, k.Session, seq).Scan(&b); err != nil {
		t.Fatal(err)
	}
	ev := &agentrunnerv1.Event{}
	if err := proto.Unmarshal(b, ev); err != nil {
		t.Fatal(err)
	}
	ev.Author = "mallory"
	b = must(proto.Marshal(ev))
	tag, err := conn.Exec(t.Context(), `UPDATE events SET record = $5`+where, k.App, k.User, k.Session, seq, b)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupt event: %v (%d rows)", err, tag.RowsAffected())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCopyTime copies AGENTRUNNER_STORECOPY_SESSIONS sessions (200
// unless set; the figure is for 10000) from bbolt to PostgreSQL
// and back, and logs the time of each copy and each verification.
func TestCopyTime(t *testing.T) {
	n := 200
	if v := os.Getenv("AGENTRUNNER_STORECOPY_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("AGENTRUNNER_STORECOPY_SESSIONS=%q: want a positive number", v)
		}
	}
	dir := t.TempDir()
	src := openBolt(t, filepath.Join(dir, "src.db"))
	start := time.Now()
	copytest.Fill(t, src, n, 8)
	t.Logf("filled %d sessions through the store API in %s", n, time.Since(start).Round(time.Millisecond))
	sums := checksums(t, src, n)
	mid := openPG(t, pg.URL(t))
	timed(t, "bolt to PostgreSQL", n, src, mid)
	back := openBolt(t, filepath.Join(dir, "back.db"))
	timed(t, "PostgreSQL to bolt", n, mid, back)
	equalChecksums(t, "bolt again", checksums(t, back, n), sums)
	if st, err := os.Stat(filepath.Join(dir, "src.db")); err == nil {
		t.Logf("source bbolt file: %d MB", st.Size()>>20)
	}
}

func timed(t *testing.T, what string, n int, src storecopy.Source, dst storecopy.Target) {
	t.Helper()
	start := time.Now()
	rep := copyAll(t, src, dst, storecopy.Options{})
	copied := time.Since(start)
	v := verify(t, src, dst, n)
	t.Logf("%s: %d sessions (%d events, %d runs, %d artifact versions, %d tool calls, %d shared records) copied in %s (%.0f sessions/s), verified in %s",
		what, rep.Copied, rep.Events, rep.Runs, rep.Artifacts, rep.ToolCalls, rep.Shared, copied.Round(time.Millisecond),
		float64(n)/copied.Seconds(), (time.Since(start) - copied).Round(time.Millisecond))
	_ = v
}

// clock and ids make the stores of TestCopyThenContinue agree on the
// times and ids of new records: the clock is frozen and each store's ids
// restart from the same number before the writes are compared.
type clock struct{ frozen atomic.Pointer[time.Time] }

func (c *clock) now() time.Time {
	if t := c.frozen.Load(); t != nil {
		return *t
	}
	return time.Now()
}

type ids struct{ n atomic.Int64 }

func (i *ids) next() string { return fmt.Sprintf("id-%08d", i.n.Add(1)) }

// TestCopyThenContinue: the copies are stores a server can go on with,
// not only read. The same writes (Continue) to the source and to its
// copies in PostgreSQL and bbolt say the same, and leave the three
// stores the same through the store API and by Verify: a waiting call
// closed, the next sequence, a client's retry found, the next artifact
// versions, a taken request id and key refused, the unfinished runs'
// index, memory, a session deleted with its records.
func TestCopyThenContinue(t *testing.T) {
	const n = 9
	dir := t.TempDir()
	var clk clock
	var srcIDs, midIDs, backIDs ids
	src, err := boltstore.Open(filepath.Join(dir, "src.db"), boltstore.Options{NoSync: true, Now: clk.now, NewID: srcIDs.next})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	copytest.Fill(t, src, n, 1)
	mid, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Now: clk.now, NewID: midIDs.next, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mid.Close() })
	copyAll(t, src, mid, storecopy.Options{})
	back, err := boltstore.Open(filepath.Join(dir, "back.db"), boltstore.Options{NoSync: true, Now: clk.now, NewID: backIDs.next})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = back.Close() })
	copyAll(t, mid, back, storecopy.Options{})

	frozen := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	clk.frozen.Store(&frozen)
	for _, i := range []*ids{&srcIDs, &midIDs, &backIDs} {
		i.n.Store(1_000_000)
	}
	want := copytest.Continue(t, src)
	wantDump := copytest.Dump(t, src, n)
	for _, c := range []struct {
		name string
		s    copytest.Store
		ids  *ids
	}{{"PostgreSQL", mid, &midIDs}, {"bolt again", back, &backIDs}} {
		copytest.Equal(t, c.name+" writes", copytest.Continue(t, c.s), want)
		copytest.Equal(t, c.name+" read back", copytest.Dump(t, c.s, n), wantDump)
		verify(t, src, c.s, countSessions(t, src))
	}
}

// failAfter is a target whose imports fail after the first few: a copy
// killed before it wrote its first checkpoint.
type failAfter struct {
	storecopy.Target
	left int
}

var errKilled = errors.New("killed")

func (f *failAfter) ImportSession(ctx context.Context, s *storecopy.Session) error {
	if f.left == 0 {
		return errKilled
	}
	f.left--
	return f.Target.ImportSession(ctx, s)
}

// TestCopyForgetsStaleCheckpoint: a checkpoint left by an earlier,
// finished copy is not the next copy's. A new copy into an empty target
// that dies before its first checkpoint is resumed from the start, so
// the sessions before the old checkpoint are copied too.
func TestCopyForgetsStaleCheckpoint(t *testing.T) {
	const n = 10
	dir := t.TempDir()
	src := openBolt(t, filepath.Join(dir, "src.db"))
	copytest.Fill(t, src, n, 2)
	cp := filepath.Join(dir, "checkpoint")
	copyAll(t, src, openBolt(t, filepath.Join(dir, "first.db")), storecopy.Options{Checkpoint: cp})

	dst := openBolt(t, filepath.Join(dir, "second.db"))
	if _, err := storecopy.Copy(t.Context(), src, &failAfter{Target: dst, left: 3}, storecopy.Options{Checkpoint: cp, PageSize: 500}); !errors.Is(err, errKilled) {
		t.Fatalf("the dying copy: %v", err)
	}
	rep := copyAll(t, src, dst, storecopy.Options{Checkpoint: cp, Resume: true})
	if rep.Copied != n-3 || rep.Present != 3 {
		t.Fatalf("resumed: %+v, want %d copied and 3 present", rep, n-3)
	}
	verify(t, src, dst, n)
}
