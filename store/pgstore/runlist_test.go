package pgstore_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// TestRunStatusBackfill: runs stored before migration 0005 (status NULL)
// get their status from their records when a store opens the database,
// so that the listings across sessions, which filter on it, list them.
func TestRunStatusBackfill(t *testing.T) {
	url := pg.URL(t)
	s := openURL(t, url)
	ctx := t.Context()
	epoch := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, st := range []agentrunnerv1.RunStatus{
		agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED,
		agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED,
		agentrunnerv1.RunStatus_RUN_STATUS_RUNNING,
	} {
		k := store.SessionKey{App: "app", User: "u", Session: "s" + string(rune('1'+i))}
		if _, err := s.CreateSession(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
		run := &agentrunnerv1.Run{RunId: "e-" + string(rune('1'+i)), AppName: k.App, UserId: k.User, SessionId: k.Session,
			Status: st, CreateTime: timestamppb.New(epoch.Add(time.Duration(i) * time.Minute))}
		if err := s.PutRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	// What a database migrated from an older one holds.
	if _, err := s.Pool().Exec(ctx, "UPDATE runs SET status = NULL"); err != nil {
		t.Fatal(err)
	}
	active := store.RunFilter{App: "app", User: "u", Statuses: []agentrunnerv1.RunStatus{
		agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED,
	}}
	if list, _, err := s.ListRunsOf(ctx, active, store.Page{}); err != nil || len(list) != 0 {
		t.Fatalf("before the backfill: %d runs, %v (the test no longer simulates old rows)", len(list), err)
	}
	s2 := openURL(t, url)
	list, next, err := s2.ListRunsOf(ctx, active, store.Page{})
	if err != nil || next != "" || len(list) != 2 || list[0].GetRunId() != "e-3" || list[1].GetRunId() != "e-2" {
		t.Fatalf("after the backfill: %v, %q, %v; want e-3 e-2", list, next, err)
	}
}
