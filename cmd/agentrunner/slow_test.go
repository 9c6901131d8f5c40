package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// pacedApps is an apps file whose offline model waits 400ms before its
// first chunk.
const pacedApps = `models:
  - name: paced
    provider: offline
    offline: { first_chunk_delay: 400ms, chunk_delay: 1ms, chunks: 3 }
apps:
  - name: paced
    root_agent: { name: a, llm: { model: paced } }
`

// TestOfflineLatencyFromAppsFile checks that the offline section of an
// apps file reaches the model: the model's first event comes no sooner
// than first_chunk_delay after the request was sent, in the chunks asked for.
// Only the lower bound is checked, which a slow machine cannot break.
func TestOfflineLatencyFromAppsFile(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(config, []byte(pacedApps), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rc, sc := runsServer(t, filepath.Join(dir, "data.db"), config)
	createSession(t, sc, "paced", "s")
	// The model's latency starts after the request is sent, so that the
	// time from the send is a bound it cannot beat. (The run record's
	// arrival was not: the server calls the model as it sends the record,
	// and a client that reads the record late saw less than the latency.)
	began := time.Now()
	stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "paced", UserId: "u", SessionId: "s", NewMessage: userText("hi"),
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
	if err != nil {
		t.Fatal(err)
	}
	var firstModel time.Duration
	partials := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		switch ev := resp.GetEvent(); {
		case ev != nil && ev.GetAuthor() != "user" && firstModel == 0:
			firstModel = time.Since(began)
			fallthrough
		case ev.GetPartial():
			if ev.GetPartial() {
				partials++
			}
		}
	}
	if firstModel < 400*time.Millisecond {
		t.Errorf("the model's first event came %v after the request, want at least the configured 400ms", firstModel)
	}
	if partials != 3 {
		t.Errorf("%d streamed chunks, want the configured 3", partials)
	}
}

// TestSlowAppCancels checks that a run of the default slow app is still
// going once it has started and stored the user's message, so that
// CancelRun cancels it rather than answer that it had already ended.
func TestSlowAppCancels(t *testing.T) {
	_, rc, sc := runsServer(t, filepath.Join(t.TempDir(), "data.db"), "")
	createSession(t, sc, "slow", "s")
	started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "slow", UserId: "u", SessionId: "s", NewMessage: userText("hello")})
	if err != nil {
		t.Fatal(err)
	}
	id := started.GetRun().GetRunId()
	// Wait until the run has stored an event (the user's message): it is
	// past admission and into its model call.
	attach, err := rc.AttachRun(t.Context(), &servicev1.AttachRunRequest{RunId: id})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := attach.Recv()
		if err != nil {
			t.Fatalf("AttachRun ended before an event: %v", err)
		}
		if resp.GetEvent() != nil {
			break
		}
	}
	resp, err := rc.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: id})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetRun().GetStatus(); got != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("CancelRun answered %v, want RUN_STATUS_CANCELLED: the slow app's run ended too soon", got)
	}
}
