package pgstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// TestSpendAcrossReplicas: two stores on one database (two replicas)
// append one user's model calls at once, from sessions of their own, by
// the pipelined path and by the transaction of a "user:" state change:
// the user's and the app's daily totals are exact, read from either
// replica and from a store opened once both are closed.
func TestSpendAcrossReplicas(t *testing.T) {
	url := pg.URL(t)
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	// The ledger's day is the store's clock at the write.
	replicas := []*pgstore.Store{openURLAt(t, url, day), openURLAt(t, url, day)}
	const perReplica, calls = 6, 10
	var (
		tally storetest.SpendTally
		wg    sync.WaitGroup
	)
	errs := make(chan error, len(replicas)*perReplica)
	for r, s := range replicas {
		for i := range perReplica {
			k := store.SessionKey{App: "app", User: "u", Session: fmt.Sprintf("r%d-s%d", r, i)}
			if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
				t.Fatal(err)
			}
			evs := make([]*agentrunnerv1.Event, calls)
			for j := range evs {
				evs[j] = storetest.SpendCall(r*1000+i*calls+j, day.Add(time.Duration(j)*time.Minute), "flash", j%4 == 0)
				if j%3 == 0 {
					evs[j].Actions = &agentrunnerv1.EventActions{StateDelta: &structpb.Struct{Fields: map[string]*structpb.Value{
						"user:last": structpb.NewNumberValue(float64(j)),
					}}}
				}
				tally.Add(evs[j])
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, ev := range evs {
					if _, err := s.AppendEvent(t.Context(), k, ev); err != nil {
						errs <- fmt.Errorf("append to %s: %w", k, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(s *pgstore.Store, what string) {
		t.Helper()
		userSpend, appSpend, err := s.DailySpend(t.Context(), "app", "u", day)
		if err != nil {
			t.Fatal(err)
		}
		storetest.WantSpend(t, what+": user's daily spend", userSpend, tally.Spend())
		storetest.WantSpend(t, what+": app's daily spend", appSpend, tally.Spend())
		list, err := s.ListSpend(t.Context(), "app", "u", day, day)
		if err != nil || len(list) != 1 {
			t.Fatalf("%s: ListSpend = %v, %v", what, list, err)
		}
		storetest.WantSpend(t, what+": listed spend", list[0].Spend, tally.Spend())
	}
	for r, s := range replicas {
		check(s, fmt.Sprint("replica ", r))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check(openURL(t, url), "a store opened afterwards")
}

// openURLAt is openURL with the store's clock stopped at at.
func openURLAt(t *testing.T, url string, at time.Time) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: quiet, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
