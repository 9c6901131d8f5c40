package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// backupSessions is how many sessions write while the backups are taken.
const backupSessions = 256

// TestBackupUnderLoad takes backups of a running server (backup --addr,
// through AdminService.Backup) while 256 sessions append events through
// its gRPC API, restores each (restore), and checks that every copy
// passes bbolt's check and holds every event acknowledged before its
// backup began, in order. AGENTRUNNER_BACKUP_COUNT sets the number of
// backups (the figure is 50).
func TestBackupUnderLoad(t *testing.T) {
	backups := envCount(t, "AGENTRUNNER_BACKUP_COUNT", 3)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "live.db"))
	sc := servicev1.NewSessionServiceClient(dial(t, addr))
	for i := range backupSessions {
		if _, err := sc.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "b", UserId: "u", SessionId: backupSession(i)}); err != nil {
			t.Fatal(err)
		}
	}
	acked, stopLoad := appendLoad(t, ctx, sc)
	wants := make([][]uint64, backups)
	start := time.Now()
	var sizes int64
	for b := range backups {
		// Each backup starts once the load has acknowledged more events
		// than at the one before, so appends surely overlap the backups
		// however quick they are on this machine.
		prev := uint64(0)
		if b > 0 {
			prev = sum(wants[b-1])
		}
		if !waitAcked(ctx, acked, prev) {
			t.Fatalf("backup %d: the load acknowledged no event past %d within a minute", b, prev)
		}
		wants[b] = snapshot(acked)
		var out, errOut strings.Builder
		args := []string{"backup", "--addr", addr, "--out", filepath.Join(dir, fmt.Sprintf("b%02d.db", b))}
		if err := run(ctx, args, strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("backup %d: %v\n%s", b, err, errOut.String())
		}
		var n int64
		fmt.Sscanf(out.String(), "backup: %d bytes", &n)
		sizes += n
	}
	took := time.Since(start)
	during := sum(snapshot(acked)) - sum(wants[0])
	stopLoad()
	t.Logf("%d backups in %s (%s each, %d MB on average); %d events appended meanwhile by %d sessions",
		backups, took.Round(time.Millisecond), (took / time.Duration(backups)).Round(time.Millisecond), sizes/int64(backups)>>20, during, backupSessions)
	if during == 0 {
		t.Fatal("no event was appended while the backups were taken: the load did not run")
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatalf("serve: %v\n%s", err, logs)
	}
	for b := range backups {
		restored := filepath.Join(dir, fmt.Sprintf("r%02d.db", b))
		var out, errOut strings.Builder
		if err := run(t.Context(), []string{"restore", "--from", filepath.Join(dir, fmt.Sprintf("b%02d.db", b)), "--data", restored},
			strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("restore %d: %v\n%s", b, err, errOut.String())
		}
		checkRestored(t, restored, wants[b])
	}
}

func backupSession(i int) string { return fmt.Sprintf("s%03d", i) }

// appendLoad appends events to every session, one writer per session,
// until stop is called; acked[i] is the count of session i's events
// acknowledged so far (their ids are e1, e2, ...).
func appendLoad(t *testing.T, ctx context.Context, sc servicev1.SessionServiceClient) (acked []atomic.Uint64, stop func()) {
	acked = make([]atomic.Uint64, backupSessions)
	loadCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, backupSessions)
	for i := range backupSessions {
		wg.Go(func() {
			for n := uint64(1); ; n++ {
				ev := &agentrunnerv1.Event{Id: fmt.Sprintf("e%d", n), Author: "user", Content: &agentrunnerv1.Content{Role: "user",
					Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("event %d of session %d", n, i)}}}}}
				_, err := sc.AppendEvent(loadCtx, &servicev1.AppendEventRequest{AppName: "b", UserId: "u", SessionId: backupSession(i), Event: ev})
				if loadCtx.Err() != nil {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("session %d, event %d: %w", i, n, err)
					return
				}
				acked[i].Store(n)
			}
		})
	}
	return acked, func() {
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("append: %v", err)
		}
	}
}

// waitAcked waits, within a minute, until more than past events are
// acknowledged in all.
func waitAcked(ctx context.Context, acked []atomic.Uint64, past uint64) bool {
	deadline := time.Now().Add(time.Minute)
	for sum(snapshot(acked)) <= past {
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func snapshot(acked []atomic.Uint64) []uint64 {
	out := make([]uint64, len(acked))
	for i := range acked {
		out[i] = acked[i].Load()
	}
	return out
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

// checkRestored opens a restored store and checks that session i holds
// events e1..e<want[i]> as sequences 1..want[i].
func checkRestored(t *testing.T, path string, want []uint64) {
	t.Helper()
	if err := boltstore.CheckFile(t.Context(), path, time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer st.Close()
	for i, n := range want {
		_, evs, err := st.GetSession(t.Context(), store.SessionKey{App: "b", User: "u", Session: backupSession(i)}, store.GetOptions{})
		if err != nil {
			t.Fatalf("%s: session %d: %v", path, i, err)
		}
		if uint64(len(evs)) < n {
			t.Fatalf("%s: session %d holds %d events; %d were acknowledged before the backup began", path, i, len(evs), n)
		}
		for k, ev := range evs[:n] {
			if ev.GetId() != fmt.Sprintf("e%d", k+1) || ev.GetSequence() != uint64(k+1) {
				t.Fatalf("%s: session %d, event #%d is %s (sequence %d); want e%d", path, i, k+1, ev.GetId(), ev.GetSequence(), k+1)
			}
		}
	}
}
