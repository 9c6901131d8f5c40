package pgstore_test

import (
	"errors"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// TestRewindRefusedWhileLeased: a replica's run holds its session's
// lease from before it reads the history, so a rewind is refused while
// the lease is live, whichever replica holds it, and goes through once
// it is released.
func TestRewindRefusedWhileLeased(t *testing.T) {
	s := openURL(t, pg.URL(t))
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "leased"}
	if _, err := s.CreateSession(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "user", InvocationId: "i1"}); err != nil {
		t.Fatal(err)
	}
	rewind := func() error {
		r, err := store.PlanRewind(ctx, s, k, "i1", func() string { return "rw" })
		if err != nil {
			return err
		}
		_, err = s.AppendRewind(ctx, k, r)
		return err
	}
	l, err := s.AcquireLease(ctx, k, "replica-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := rewind(); !errors.Is(err, store.ErrFailedPrecondition) {
		t.Fatalf("rewind of a leased session: %v, want ErrFailedPrecondition", err)
	}
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := rewind(); err != nil {
		t.Fatalf("rewind once the lease is released: %v", err)
	}
}
