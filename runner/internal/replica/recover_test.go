package replica

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestRecoverEvery: a lease's lifetime unless set; negative is no loop.
func TestRecoverEvery(t *testing.T) {
	for _, c := range []struct{ every, want time.Duration }{
		{0, 30 * time.Second}, {time.Second, time.Second}, {-1, 0},
	} {
		if got := recoverEvery(c.every, 30*time.Second); got != c.want {
			t.Errorf("recoverEvery(%v, 30s) = %v, want %v", c.every, got, c.want)
		}
	}
}

// TestRecoverLoopRunsUntilStopped: the loop calls Recover every period,
// goes on after an error, and stop cancels a Recover in progress and
// returns only once it has returned: nothing of the runner's runs after
// Shutdown or Close.
func TestRecoverLoopRunsUntilStopped(t *testing.T) {
	calls := make(chan context.Context)
	returned := make(chan struct{})
	n := 0
	l := newRecoverLoop("app", time.Millisecond, func(ctx context.Context) (int, int, error) {
		n++
		if n < 3 {
			return 0, 0, errors.New("database away") // the loop goes on
		}
		calls <- ctx
		<-ctx.Done() // a Recover still at work when the loop stops
		close(returned)
		return 0, 0, ctx.Err()
	}, slog.New(slog.DiscardHandler))
	l.start()
	ctx := <-calls
	l.stop()
	select {
	case <-returned:
	default:
		t.Fatal("stop returned before the Recover in progress did")
	}
	if ctx.Err() == nil {
		t.Error("the Recover in progress was not cancelled")
	}
	if n != 3 {
		t.Errorf("Recover called %d times, want 3 (two failures, then the one stopped)", n)
	}
	l.stop() // Shutdown, then Close
}
