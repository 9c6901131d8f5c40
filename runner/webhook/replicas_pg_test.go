package webhook_test

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/webhook"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs it.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// TestReplicasShareTheOutbox: three workers, each on a pool of its own
// (replicas), deliver one PostgreSQL outbox: every delivery arrives,
// and, with leases longer than the test and a receiver that answers at
// once, none twice.
func TestReplicasShareTheOutbox(t *testing.T) {
	url := pg.URL(t)
	open := func() *pgstore.Store {
		s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	writer := open()
	rcv := newReceiver(t, 0)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := writer.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	const runs = 40
	for i := range runs {
		run := &agentrunnerv1.Run{RunId: fmt.Sprintf("r-%02d", i), AppName: k.App, UserId: k.User, SessionId: k.Session,
			Status: agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CreateTime: timestamppb.Now(), Webhook: &agentrunnerv1.Webhook{Url: rcv.srv.URL}}
		if err := writer.PutRun(t.Context(), run); err != nil {
			t.Fatal(err)
		}
	}
	settled := make(chan string, 10*runs)
	var stops []func()
	for range 3 {
		stops = append(stops, startWorker(t, open(), []string{hostOf(rcv.srv.URL)},
			webhook.Options{Lease: time.Hour, Parallel: 4, Observe: func(o string) { settled <- o }}))
	}
	// Stopped only once every delivery is settled: a worker stopped
	// mid-POST would leave its delivery to be made again, as it should.
	deadline := time.After(time.Minute)
	for n := 0; n < runs; {
		select {
		case o := <-settled:
			if o != webhook.OutcomeDelivered {
				t.Fatalf("an attempt's outcome: %s", o)
			}
			n++
		case <-deadline:
			t.Fatalf("delivered %d of %d", n, runs)
		}
	}
	for _, stop := range stops {
		stop()
	}
	if n := rcv.requests(); n != runs {
		t.Fatalf("%d requests for %d deliveries: some were made twice", n, runs)
	}
}
