package pgstore_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// TestStaleWriterFenced: a writer whose session lease was taken over (it
// expired, another replica acquired it) is refused on append, with
// nothing stored, and can neither renew nor release; the new holder
// appends.
func TestStaleWriterFenced(t *testing.T) {
	url := pg.URL(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx := t.Context()
	k := key(0)
	if _, err := a.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	text := func(s string) *agentrunnerv1.Event {
		return &agentrunnerv1.Event{Author: "agent", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}}
	}
	// A lease of a microsecond has expired by the next statement.
	old, err := a.AcquireLease(ctx, k, "replica-a", time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendEvent(store.WithLease(ctx, old), k, text("a, leased")); err != nil {
		t.Fatalf("append under a lease not yet taken: %v", err)
	}
	cur, err := b.AcquireLease(ctx, k, "replica-b", time.Minute)
	if err != nil {
		t.Fatalf("acquire an expired lease: %v", err)
	}
	if cur.Token <= old.Token {
		t.Fatalf("new lease token %d, old %d: want it to grow", cur.Token, old.Token)
	}
	if _, err := a.AcquireLease(ctx, k, "replica-a", time.Minute); !errors.Is(err, store.ErrAlreadyExists) || !strings.Contains(err.Error(), "replica-b") {
		t.Fatalf("acquire of a live lease held by another: %v", err)
	}
	stale := store.WithLease(ctx, old)
	_, err = a.AppendEvent(stale, k, text("a, stale"))
	wantFenced(t, err, "AppendEvent")
	_, _, err = a.AppendEventOnce(stale, k, &agentrunnerv1.Event{Id: "x", Author: "agent"})
	wantFenced(t, err, "AppendEventOnce")
	run := &agentrunnerv1.Run{RunId: "e-1", AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, CreateTime: timestamppb.Now()}
	_, _, err = a.AppendRunEvent(stale, k, text("a, stale run"), run)
	wantFenced(t, err, "AppendRunEvent")
	_, err = a.RenewLease(ctx, old, time.Minute)
	wantFenced(t, err, "RenewLease")
	wantFenced(t, a.ReleaseLease(ctx, old), "ReleaseLease")

	if _, err := b.AppendEvent(store.WithLease(ctx, cur), k, text("b")); err != nil {
		t.Fatalf("append by the new holder: %v", err)
	}
	if cur, err = b.RenewLease(ctx, cur, time.Minute); err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	_, evs, err := a.GetSession(ctx, k, store.GetOptions{})
	if err != nil || len(evs) != 2 || evs[0].GetContent().GetParts()[0].GetText() != "a, leased" || evs[1].GetContent().GetParts()[0].GetText() != "b" {
		t.Fatalf("session holds %d events (%v): want the leased writers' two", len(evs), err)
	}
	if _, err := b.GetRun(ctx, "e-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a fenced AppendRunEvent stored its run: %v", err)
	}
	// Released, the lease is free; the next holder's token still grows.
	if err := b.ReleaseLease(ctx, cur); err != nil {
		t.Fatal(err)
	}
	next, err := a.AcquireLease(ctx, k, "replica-a", time.Minute)
	if err != nil || next.Token <= cur.Token {
		t.Fatalf("acquire after release: token %d (was %d), %v", next.Token, cur.Token, err)
	}
	_, err = b.AppendEvent(store.WithLease(ctx, cur), k, text("b, after release"))
	wantFenced(t, err, "AppendEvent under a released lease, taken again")
}

func wantFenced(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("%s by a stale writer: %v, want ErrFenced", what, err)
	}
}

// openBench opens a store on a new database for a benchmark.
func openBench(b *testing.B) (*pgstore.Store, error) {
	s, err := pgstore.Open(b.Context(), pg.URL(b), pgstore.Options{Logger: quiet})
	if err == nil {
		b.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}
