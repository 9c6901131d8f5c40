package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The daily spend ledger (store.SpendStore): bucket spend, keyed
// T(app, user, day, model), each value a Spend. An append of an event
// with usage adds it to two keys in its own transaction: its user's and
// allUsers', the app's total. The user comes before the day so that a
// user's listing over a range of days, and the app's, is one range scan
// of adjacent keys whatever the number of users.

// bucketSpend holds the ledger (schema 8).
var bucketSpend = []byte("spend")

// allUsers is the user part of the app's totals: the empty string, which
// no session's user can be (SessionKey.Validate refuses it), and which
// sorts before every user of the app.
const allUsers = ""

// sessionCostField is Session.cost, summed by patchSession beside
// sessionUsageField.
const sessionCostField = 10

// sessionTotalTokensField is Session.total_tokens, summed beside them.
const sessionTotalTokensField = 11

// migrateSpend adds the spend bucket, empty: what was spent before the
// ledger existed is not known by day. Open creates the bucket before it
// migrates; the version is raised all the same so that an older binary,
// which would append model calls without counting them, refuses the file.
func migrateSpend(tx *bbolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketSpend); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketSpend, err)
	}
	return nil
}

// spendKey is T(app, user, day, model).
func spendKey(app, user, day, model string) []byte {
	b := make([]byte, 0, len(app)+len(user)+len(day)+len(model)+8)
	return appendString(appendString(appendString(appendString(b, app), user), day), model)
}

// spendKeys returns the two ledger keys an append of ev to session k at
// now adds to, the user's and the app's; none for an event without usage.
// They are made when the event is prepared, outside the committer.
func spendKeys(k store.SessionKey, ev *agentrunnerv1.Event, now time.Time) [2][]byte {
	if ev.GetUsageMetadata() == nil {
		return [2][]byte{}
	}
	day, model := store.Day(now), store.SpendModel(ev)
	return [2][]byte{spendKey(k.App, k.User, day, model), spendKey(k.App, allUsers, day, model)}
}

// planSpend returns the new values of the ledger keys w adds to, read in
// tx; none for an event without usage, whose append opens no bucket for
// it. It reads and encodes before the append writes anything, so that a
// corrupt entry fails the append alone (see writeOp).
func planSpend(tx *bbolt.Tx, w *eventWrite) ([2][]byte, error) {
	var out [2][]byte
	if w.spend[0] == nil {
		return out, nil
	}
	b := tx.Bucket(bucketSpend)
	for i, key := range w.spend {
		// Patched in its encoding (patch.go), not decoded and encoded.
		var err error
		if out[i], err = patchSpend(b.Get(key), w.stored); err != nil {
			return out, fmt.Errorf("spend: %w", err)
		}
	}
	return out, nil
}

// putSpend writes what planSpend returned.
func putSpend(tx *bbolt.Tx, w *eventWrite, vals [2][]byte) error {
	if w.spend[0] == nil {
		return nil
	}
	b := tx.Bucket(bucketSpend)
	for i, key := range w.spend {
		if err := put(b, key, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// decodeSpend decodes a ledger value; nil (no entry yet) is a zero Spend.
func decodeSpend(v []byte) (*agentrunnerv1.Spend, error) {
	sp := &agentrunnerv1.Spend{}
	if err := proto.Unmarshal(v, sp); err != nil {
		return nil, fmt.Errorf("decode spend: %w", err)
	}
	return sp, nil
}

// DailySpend implements store.SpendStore: the user's and the app's keys of
// the day, summed over their models.
func (s *Store) DailySpend(ctx context.Context, app, user string, day time.Time) (userSpend, appSpend *agentrunnerv1.Spend, err error) {
	if user == "" {
		return nil, nil, fmt.Errorf("user_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, nil, err
	}
	d := store.Day(day)
	userSpend, appSpend = &agentrunnerv1.Spend{}, &agentrunnerv1.Spend{}
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketSpend).Cursor()
		for _, p := range []struct {
			user  string
			total *agentrunnerv1.Spend
		}{{user, userSpend}, {allUsers, appSpend}} {
			prefix := appendString(appendString(appendString(nil, app), p.user), d)
			for key, v := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix); key, v = c.Next() {
				sp, err := decodeSpend(v)
				if err != nil {
					return err
				}
				store.AddSpend(p.total, sp)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return userSpend, appSpend, nil
}

// ListSpend implements store.SpendStore: one range scan of the user's (or
// allUsers') keys from the first day to the last, which key order gives
// by day and then by model.
func (s *Store) ListSpend(ctx context.Context, app, user string, from, to time.Time) ([]store.DaySpend, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, err
	}
	first, last := store.Day(from), store.Day(to)
	prefix := appendString(appendString(nil, app), user)
	var out []store.DaySpend
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketSpend).Cursor()
		for key, v := c.Seek(appendString(bytes.Clone(prefix), first)); key != nil && bytes.HasPrefix(key, prefix); key, v = c.Next() {
			day, rest, err := readString(key[len(prefix):])
			if err != nil {
				return fmt.Errorf("spend key: %w", err)
			}
			if day > last {
				break
			}
			model, _, err := readString(rest)
			if err != nil {
				return fmt.Errorf("spend key: %w", err)
			}
			sp, err := decodeSpend(v)
			if err != nil {
				return err
			}
			out = append(out, store.DaySpend{Day: day, Model: model, Spend: sp})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
