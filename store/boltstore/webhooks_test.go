package boltstore

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// TestWebhookMigration: a file of schema 8, which has no outbox, is
// migrated to one whose runs queue their deliveries, kept across a
// reopen.
func TestWebhookMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path, Options{schema: 8, migrations: schemaMigrations[:7]})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketWebhooks) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d after open, want %d", v, currentSchema)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	run := &agentrunnerv1.Run{RunId: "r1", AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, CreateTime: timestamppb.Now(),
		Webhook: &agentrunnerv1.Webhook{Url: "http://127.0.0.1:1/"}}
	if err := s.PutRun(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := s.ListDeliveries(t.Context(), agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING, 10)
	if err != nil || len(ds) != 1 || ds[0].GetRun().GetRunId() != "r1" {
		t.Fatalf("deliveries after reopen = %v, %v", ds, err)
	}
}
