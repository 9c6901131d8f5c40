package boltstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentrunner/agentrunner/store"
)

// Holds (store.SpendHolder) live in memory: one process owns the file,
// so every run that could hold is in it, and a hold outlives no process
// (a crash ends the calls it covered). The mutex makes the check against
// the ledger and the hold one step: a release waits on it too, and comes
// after the append that put the call's usage in the ledger, so a check
// never misses both.
type holdState struct {
	mu    sync.Mutex
	holds map[string]store.SpendHold // by app and id
}

var _ store.SpendHolder = (*Store)(nil)

func holdKey(app, id string) string { return app + "\x00" + id }

// HoldSpend implements store.SpendHolder.
func (s *Store) HoldSpend(ctx context.Context, h store.SpendHold) error {
	if h.ID == "" || h.App == "" || h.User == "" {
		return fmt.Errorf("hold needs an id, an app and a user: %w", store.ErrInvalidArgument)
	}
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	userSpent, appSpent, err := s.DailySpend(ctx, h.App, h.User, h.Day)
	if err != nil {
		return err
	}
	var userHeld, appHeld store.Held
	day := store.Day(h.Day)
	now := s.opts.Now()
	for k, o := range s.holds.holds {
		switch {
		case now.After(o.Expires):
			delete(s.holds.holds, k)
		case o.App != h.App || store.Day(o.Day) != day:
		default:
			appHeld.Add(o)
			if o.User == h.User {
				userHeld.Add(o)
			}
		}
	}
	if err := store.CheckHold(h, userSpent, appSpent, userHeld, appHeld); err != nil {
		return err
	}
	if s.holds.holds == nil {
		s.holds.holds = map[string]store.SpendHold{}
	}
	s.holds.holds[holdKey(h.App, h.ID)] = h
	return nil
}

// ReleaseSpend implements store.SpendHolder.
func (s *Store) ReleaseSpend(_ context.Context, app, id string) error {
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	delete(s.holds.holds, holdKey(app, id))
	return nil
}
