package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// TestSpendKeptOnReopen: the ledger and the session's cost are in the
// file: closed and opened again, the store returns the same totals.
func TestSpendKeptOnReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spend.db")
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	// The ledger's day is the store's clock at the write.
	s, err := Open(path, Options{NoSync: true, Now: func() time.Time { return day.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	var tally storetest.SpendTally
	for i := range 6 {
		ev := storetest.SpendCall(i, day.Add(time.Duration(i)*time.Hour), "flash", i == 2)
		tally.Add(ev)
		if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	userSpend, appSpend, err := s.DailySpend(t.Context(), "app", "u", day)
	if err != nil {
		t.Fatal(err)
	}
	storetest.WantSpend(t, "user's spend after reopen", userSpend, tally.Spend())
	storetest.WantSpend(t, "app's spend after reopen", appSpend, tally.Spend())
	list, err := s.ListSpend(t.Context(), "app", "", day, day)
	if err != nil || len(list) != 1 || list[0].Model != "flash" || list[0].Day != "2026-11-26" {
		t.Fatalf("ListSpend after reopen = %v, %v", list, err)
	}
	storetest.WantSpend(t, "listed spend after reopen", list[0].Spend, tally.Spend())
	sess, _, err := s.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WantSpend(t, "session cost after reopen", sess.GetCost(), tally.Cost())
}

// TestSpendMigration: a file of schema 6, which has no spend bucket, is
// migrated to a current one whose appends are counted.
func TestSpendMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path, Options{schema: 6, migrations: schemaMigrations[:5]})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A schema 6 file written by an older binary lacks the bucket.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketSpend) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d after open, want %d", v, currentSchema)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	ev := storetest.SpendCall(0, time.Now(), "flash", false)
	if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
		t.Fatal(err)
	}
	var tally storetest.SpendTally
	tally.Add(ev)
	got, _, err := s.DailySpend(t.Context(), "app", "u", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	storetest.WantSpend(t, "spend after migration", got, tally.Spend())
}

// TestSpendNoUsageNoWrite: an append without usage writes nothing to the
// ledger, however many are made.
func TestSpendNoUsageNoWrite(t *testing.T) {
	s, _ := newTestStore(t, Options{NoSync: true})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ev := storetest.SpendCall(i, time.Now(), "flash", false)
		ev.UsageMetadata = nil
		if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
	err := s.view(t.Context(), func(tx *bbolt.Tx) error {
		if n := tx.Bucket(bucketSpend).Stats().KeyN; n != 0 {
			return fmt.Errorf("%d ledger keys after appends without usage", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := s.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sess.GetCost() != nil {
		t.Fatalf("session cost %v after appends without usage", sess.GetCost())
	}
}
