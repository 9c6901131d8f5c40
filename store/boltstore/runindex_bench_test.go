package boltstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// BenchmarkListActiveRuns is the runs board's read: the first page of a
// user's active runs, and of the app's (every user), across 1,000
// sessions of 10 users, each session with 20 finished runs and 2 active
// ones (one RUNNING, one INPUT_REQUIRED). The file holds 22,000 runs; a
// page of active runs reads only active ones, from the run index. The
// pages of every status are there for scale: a user's walks one range,
// the app's merges its users'.
func BenchmarkListActiveRuns(b *testing.B) {
	const (
		users, sessions, finished, active = 10, 1000, 20, 2
	)
	path := filepath.Join(b.TempDir(), "runs.db")
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	grow(b, path, func(s *Store) {
		n := 0
		for i := range sessions {
			k := store.SessionKey{App: "app", User: fmt.Sprintf("u%d", i%users), Session: fmt.Sprintf("s%04d", i)}
			if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			for j := range finished + active {
				st := agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
				switch j {
				case finished:
					st = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
				case finished + 1:
					st = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED
				}
				n++
				run := &agentrunnerv1.Run{RunId: fmt.Sprintf("e-%07d", n), AppName: k.App, UserId: k.User, SessionId: k.Session, Status: st,
					CreateTime: timestamppb.New(epoch.Add(time.Duration(n) * time.Second))}
				if err := s.PutRun(b.Context(), run); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	statuses := []agentrunnerv1.RunStatus{agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED}
	for _, bc := range []struct {
		name string
		f    store.RunFilter
		want int // the page: 100 of the scope's active runs
	}{
		{"user", store.RunFilter{App: "app", User: "u3", Statuses: statuses}, 100},
		{"app", store.RunFilter{App: "app", Statuses: statuses}, 100},
		{"user_all_statuses", store.RunFilter{App: "app", User: "u3"}, 100},
		{"app_all_statuses", store.RunFilter{App: "app"}, 100}, // a merge of the 10 users' ranges
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				list, next, err := s.ListRunsOf(b.Context(), bc.f, store.Page{})
				if err != nil || len(list) != bc.want || next == "" {
					b.Fatalf("ListRunsOf = %d runs, %q, %v", len(list), next, err)
				}
			}
		})
	}
}
