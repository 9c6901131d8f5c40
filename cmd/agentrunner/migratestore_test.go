package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/storecopy"
	"github.com/agentrunner/agentrunner/store/storecopy/copytest"
)

// migrateSessions is the size of the store the kill test copies: enough
// pages (500 sessions each) that a kill after the first checkpoint lands
// well before the end.
const migrateSessions = 3000

// TestMigrateStoreKill9 runs the binary's migrate-store from a bbolt file
// to PostgreSQL, kills it (SIGKILL) once the checkpoint file says a page
// is copied, and reruns it: without --resume the half-filled target is
// refused; with it the copy finishes, verifies, and the target holds
// exactly the source's rows, none twice.
func TestMigrateStoreKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "src.db")
	fillBolt(t, data, migrateSessions)
	url := pg.URL(t)
	from, to := "--from=bolt:"+data, "--to="+url
	// The default checkpoint of a PostgreSQL target is in the working
	// directory: the test's.
	checkpoint := filepath.Join(dir, "agentrunner-migrate.checkpoint")

	killed := killWhenCheckpointed(t, bin, dir, checkpoint, from, to)
	t.Logf("killed after the checkpoint at %d sessions", killed.Copied)

	out, err := runMigrate(bin, dir, from, to)
	if err == nil || !strings.Contains(out, "not empty") {
		t.Fatalf("rerun without --resume: %v\n%s", err, out)
	}
	out, err = runMigrate(bin, dir, from, to, "--resume")
	if err != nil {
		t.Fatalf("rerun with --resume: %v\n%s", err, out)
	}
	var copied, present int
	if _, err := fmt.Sscanf(lineWith(out, "copied: "), "copied: %d sessions (%d present already)", &copied, &present); err != nil {
		t.Fatalf("no count in %q: %v", out, err)
	}
	t.Logf("resumed: %d sessions copied, %d present already", copied, present)
	if killed.Copied+copied+present != migrateSessions {
		t.Fatalf("checkpoint %d + copied %d + present %d, want %d sessions", killed.Copied, copied, present, migrateSessions)
	}
	if want := fmt.Sprintf("verified: %d sessions", migrateSessions); !strings.Contains(out, want) {
		t.Fatalf("the resumed copy did not say %q:\n%s", want, out)
	}
	checkMigrated(t, data, url)
}

// fillBolt writes n sessions of every kind of record into a new bbolt
// file, and closes it for the binary to open.
func fillBolt(t *testing.T, path string, n int) {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	copytest.Fill(t, s, n, 8)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func runMigrate(bin, dir string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"migrate-store"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lineWith(out, prefix string) string {
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// migrateCheckpoint is what the test reads of the checkpoint file.
type migrateCheckpoint struct {
	After  store.SessionKey `json:"after"`
	Copied int              `json:"copied"`
}

// killWhenCheckpointed starts a copy and kills it with SIGKILL as soon as
// the checkpoint file records a page, polling the file (at most a
// minute). A copy that ends first fails the test: the store is too small
// for the machine.
func killWhenCheckpointed(t *testing.T, bin, dir, checkpoint string, args ...string) migrateCheckpoint {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"migrate-store"}, args...)...)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var cp migrateCheckpoint
	deadline := time.Now().Add(time.Minute)
	for cp.Copied == 0 {
		select {
		case err := <-exited:
			t.Fatalf("the copy ended (%v) before it could be killed:\n%s", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no checkpoint within a minute:\n%s", out.String())
		}
		if b, err := os.ReadFile(checkpoint); err == nil {
			if err := json.Unmarshal(b, &cp); err != nil {
				t.Fatalf("checkpoint %s: %v", b, err)
			}
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || strings.Contains(out.String(), "verified:") {
		t.Fatalf("the copy was not killed half way (%v):\n%s", err, out.String())
	}
	return cp
}

// checkMigrated compares the stores again from the test (Verify), and
// counts PostgreSQL's rows against the source's records.
func checkMigrated(t *testing.T, data, url string) {
	t.Helper()
	src, err := boltstore.Open(data, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	v, err := storecopy.Verify(t.Context(), src, dst, 0)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var sessions, events, runs, artifacts, calls int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM events), (SELECT count(*) FROM runs),
		(SELECT count(*) FROM artifacts WHERE scope <> ''), (SELECT count(*) FROM tool_calls)`).Scan(&sessions, &events, &runs, &artifacts, &calls); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(sessions, events, runs, artifacts, calls)
	want := fmt.Sprint(v.Sessions, v.Events, v.Runs, v.Artifacts, v.ToolCalls)
	if got != want || v.Sessions != migrateSessions {
		t.Fatalf("PostgreSQL rows (sessions, events, runs, artifact versions, tool calls) %s, the source's %s (%d sessions made)", got, want, migrateSessions)
	}
	t.Logf("verified: %+v", v)
}

// TestMigrateStoreUsage: missing or equal stores and unknown schemes are
// usage errors (exit 2), before any store is opened.
func TestMigrateStoreUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--from", "bolt:a.db"},
		{"--from", "bolt:a.db", "--to", "bolt:a.db"},
		{"--from", "bolt:a.db", "--to", "mysql://x"},
		{"--from", "bolt:a.db", "--to", "bolt:b.db", "extra"},
	} {
		err := run(t.Context(), append([]string{"migrate-store"}, args...), strings.NewReader(""), new(strings.Builder), new(strings.Builder))
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("migrate-store %q: %v, want a usage error", args, err)
		}
	}
}

// TestMigrateStoreBoltToBolt: bolt to bolt (compaction) in process, with
// the default checkpoint beside the target; a missing source file is an
// error and is not created (bbolt would create it, and the copy of the
// empty store would pass).
func TestMigrateStoreBoltToBolt(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.db"), filepath.Join(dir, "sub", "dst.db")
	fillBolt(t, src, 20)
	var out, errOut strings.Builder
	if err := run(t.Context(), []string{"migrate-store", "--from", "bolt:" + src, "--to", "bolt:" + dst}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("migrate-store: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "verified: 20 sessions") {
		t.Fatalf("output:\n%s", out.String())
	}
	if _, err := os.Stat(dst + ".migrate-checkpoint"); err != nil {
		t.Fatalf("no checkpoint beside the target: %v", err)
	}
	missing := filepath.Join(dir, "typo.db")
	err := run(t.Context(), []string{"migrate-store", "--from", "bolt:" + missing, "--to", "bolt:" + filepath.Join(dir, "x.db")}, strings.NewReader(""), &out, &errOut)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing source: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing source was created: %v", err)
	}
}
