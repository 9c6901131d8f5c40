package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs it.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// openURL opens a store on the database at url, closed when t ends.
func openURL(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// quiet is the tests' logger: migrations applied are no news here.
var quiet = slog.New(slog.DiscardHandler)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}

// TestSpendConformance runs the ledger's tests that set the store's clock.
func TestSpendConformance(t *testing.T) {
	storetest.RunSpend(t, func(t *testing.T, now func() time.Time) store.Store {
		s, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Logger: quiet, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestMemoryConformance runs the memory suite that boltstore runs too.
func TestMemoryConformance(t *testing.T) {
	storetest.RunMemory(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}

// TestMigrateConcurrently: replicas that start together on an empty
// database apply each migration once (the advisory lock), and a second
// Migrate applies nothing.
func TestMigrateConcurrently(t *testing.T) {
	url := pg.URL(t)
	const replicas = 4
	var wg sync.WaitGroup
	errs := make(chan error, replicas)
	for range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pgstore.Open(t.Context(), url, pgstore.Options{})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var rows, version int
	if err := pool.QueryRow(t.Context(), "SELECT count(*), max(version) FROM schema_migrations").Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != version || version < 1 {
		t.Fatalf("schema_migrations holds %d rows up to version %d", rows, version)
	}
	applied, err := pgstore.Migrate(t.Context(), pool, nil)
	if err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate applied %v, %v", applied, err)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer binary is not
// opened.
func TestNewerSchemaRefused(t *testing.T) {
	url := pg.URL(t)
	s := openURL(t, url)
	v, err := s.SchemaVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(t.Context(), "INSERT INTO schema_migrations (version, name) VALUES ($1, 'from_the_future.sql')", v+1); err != nil {
		t.Fatal(err)
	}
	_, err = pgstore.Open(t.Context(), url, pgstore.Options{})
	if err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Fatalf("Open of a database at a newer schema: %v", err)
	}
}

// TestAppendsAcrossStores: two stores on one database (two replicas)
// appending to the same sessions at once keep every session's sequences
// dense and unique: the session row lock, not process memory, orders
// appends.
func TestAppendsAcrossStores(t *testing.T) {
	url := pg.URL(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx := t.Context()
	const sessions, perWriter = 4, 20
	for i := range sessions {
		if _, err := a.CreateSession(ctx, key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*sessions)
	for i := range sessions {
		for _, s := range []*pgstore.Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range perWriter {
					ev := &agentrunnerv1.Event{Author: "agent", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprint(j)}}}}}
					if _, err := s.AppendEvent(ctx, key(i), ev); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range sessions {
		sess, evs, err := b.GetSession(ctx, key(i), store.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2*perWriter || sess.GetLastSequence() != 2*perWriter {
			t.Fatalf("session %d: %d events, last_sequence %d", i, len(evs), sess.GetLastSequence())
		}
		for j, ev := range evs {
			if ev.GetSequence() != uint64(j+1) {
				t.Fatalf("session %d: event %d has sequence %d", i, j, ev.GetSequence())
			}
		}
	}
}

func key(i int) store.SessionKey {
	return store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
}

// TestKeysPostgresCannotHold: strings text columns cannot hold are
// refused as invalid arguments, not database errors.
func TestKeysPostgresCannotHold(t *testing.T) {
	s := openURL(t, pg.URL(t))
	for _, k := range []store.SessionKey{
		{App: "a\x00b", User: "u", Session: "s"},
		{App: "a", User: "u\xff", Session: "s"},
	} {
		if _, err := s.CreateSession(t.Context(), k, nil); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("CreateSession(%q) = %v, want invalid argument", k, err)
		}
	}
}

// TestLeases: the storetest lease suite; TestAppendsAcrossStores covers
// two processes on one database.
func TestLeases(t *testing.T) {
	storetest.RunLeases(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}

// openBench opens a store on a new database for a benchmark.
func openBench(b *testing.B) (*pgstore.Store, error) {
	s, err := pgstore.Open(b.Context(), pg.URL(b), pgstore.Options{Logger: quiet})
	if err == nil {
		b.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// TestLongSessionWalks: reads of a session longer than the first chunks
// the store reads events in (32, then 64, ...) see every event once, in
// order, with counts, sequences and byte bounds applied across chunks.
func TestLongSessionWalks(t *testing.T) {
	s := openURL(t, pg.URL(t))
	ctx := t.Context()
	k := key(0)
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	const n = 150
	var sizes []int // store.ItemBytes of each stored event, by sequence - 1
	for i := range n {
		ev, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "agent", Content: &agentrunnerv1.Content{
			Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("event %03d", i+1)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, store.ItemBytes(proto.Size(ev)))
	}
	budget := 0 // what the newest 90 events take
	for _, sz := range sizes[n-90:] {
		budget += sz
	}
	span := func(from, to int) string { // sequences from..to
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprint(&b, i, " ")
		}
		return b.String()
	}
	for _, tc := range []struct {
		opts store.GetOptions
		want string
	}{
		{store.GetOptions{}, span(1, n)},
		{store.GetOptions{NumRecentEvents: 100}, span(51, n)},
		{store.GetOptions{AfterSequence: 10}, span(11, n)},
		{store.GetOptions{MaxBytes: budget}, span(n-89, n)},
		{store.GetOptions{MaxBytes: budget, NumRecentEvents: 120, AfterSequence: 70}, span(71, n)},
	} {
		_, evs, err := s.GetSession(ctx, k, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqList(evs); got != tc.want {
			t.Errorf("GetSession(%+v) = %s\nwant %s", tc.opts, got, tc.want)
		}
	}
	for _, size := range []int{1000, 100, 33} {
		var all []*agentrunnerv1.Event
		page := store.Page{Size: size}
		for {
			evs, next, err := s.ListEvents(ctx, k, store.EventFilter{}, page)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, evs...)
			if next == "" {
				break
			}
			page.Token = next
		}
		if got := seqList(all); got != span(1, n) {
			t.Errorf("ListEvents by pages of %d = %s", size, got)
		}
	}
}

func seqList(evs []*agentrunnerv1.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprint(&b, ev.GetSequence(), " ")
	}
	return b.String()
}

// TestRefusedWriteReleasesItsLock: a pipelined write refused after its
// reads (the session row locked) leaves no transaction behind: another
// store appends to the session at once, and the refused store's only
// connection serves its next write.
func TestRefusedWriteReleasesItsLock(t *testing.T) {
	url := pg.URL(t)
	a, b := openURL(t, url+"&pool_max_conns=1"), openURL(t, url)
	ctx := t.Context()
	k := key(0)
	if _, err := a.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	run := func(id string) *agentrunnerv1.Run {
		return &agentrunnerv1.Run{RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session, RequestId: "req",
			Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, CreateTime: timestamppb.Now()}
	}
	if err := a.PutRun(ctx, run("e-1")); err != nil {
		t.Fatal(err)
	}
	ev := &agentrunnerv1.Event{Author: "agent"}
	if _, _, err := a.AppendRunEvent(ctx, k, ev, run("e-2")); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("AppendRunEvent of a second run with the request id: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := b.AppendEvent(tctx, k, ev); err != nil {
		t.Fatalf("another store's append after the refused write: %v", err)
	}
	if got, err := a.AppendEvent(tctx, k, ev); err != nil || got.GetSequence() != 2 {
		t.Fatalf("the refused store's next append: %v, %v", got, err)
	}
}

// TestOnCommit: every committed write is reported once, whichever path
// wrote it (pipelined, or a transaction for shared state); reads and
// refused writes are not.
func TestOnCommit(t *testing.T) {
	var commits atomic.Int64
	s, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Logger: quiet, OnCommit: func(d time.Duration, writes int) {
		if d <= 0 || writes != 1 {
			t.Errorf("OnCommit(%v, %d)", d, writes)
		}
		commits.Add(1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	k := key(0)
	delta, _ := structpb.NewStruct(map[string]any{"user:n": 1})
	steps := []struct {
		name string
		do   func() error
		want int64
	}{
		{"CreateSession", func() error { _, err := s.CreateSession(ctx, k, nil); return err }, 1},
		{"AppendEvent", func() error { _, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a"}); return err }, 2},
		{"AppendEvent with a user: delta", func() error {
			_, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "a", Actions: &agentrunnerv1.EventActions{StateDelta: delta}})
			return err
		}, 3},
		{"GetSession", func() error { _, _, err := s.GetSession(ctx, k, store.GetOptions{}); return err }, 3},
		{"AppendEvent to a missing session", func() error {
			if _, err := s.AppendEvent(ctx, key(9), &agentrunnerv1.Event{Author: "a"}); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("got %v, want ErrNotFound", err)
			}
			return nil
		}, 3},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := commits.Load(); got != st.want {
			t.Fatalf("after %s: %d commits reported, want %d", st.name, got, st.want)
		}
	}
}

// TestForkConformance runs the fork and rewind suite that boltstore runs too.
func TestForkConformance(t *testing.T) {
	storetest.RunFork(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}

// TestWebhookConformance runs the webhook outbox's suite on PostgreSQL.
func TestWebhookConformance(t *testing.T) {
	storetest.RunWebhooks(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}

// TestScheduleConformance runs the schedule store suite that boltstore runs too.
func TestScheduleConformance(t *testing.T) {
	storetest.RunSchedules(t, func(t *testing.T) store.Store { return openURL(t, pg.URL(t)) })
}
