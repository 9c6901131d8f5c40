package boltstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Schedule buckets, created by their first write (a file written before
// schedules has none, and a missing bucket reads as empty, so no schema
// migration is needed):
//
//	schedules       T(id) -> Schedule (API schedules only)
//	schedule_state  T(id) -> scheduleState (JSON)
//	schedule_fires  T(id) U(time, Unix ns) -> fireRecord (JSON)
var (
	bucketSchedules     = []byte("schedules")
	bucketScheduleState = []byte("schedule_state")
	bucketScheduleFires = []byte("schedule_fires")
)

var _ store.ScheduleStore = (*Store)(nil)

type scheduleState struct {
	Cursor int64      `json:"cursor"`
	Last   fireRecord `json:"last"`
}

type fireRecord struct {
	Time     int64  `json:"time"`
	Holder   string `json:"holder,omitempty"`
	Finished bool   `json:"finished,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (f fireRecord) fire(id string) store.ScheduleFire {
	sf := store.ScheduleFire{ScheduleID: id, Holder: f.Holder, Finished: f.Finished, RunID: f.RunID, Error: f.Error}
	if f.Time != 0 {
		sf.Time = time.Unix(0, f.Time).UTC()
	}
	return sf
}

func fireKey(id string, at int64) []byte { return appendUint64(appendString(nil, id), uint64(at)) }

// CreateSchedule implements store.ScheduleStore.
func (s *Store) CreateSchedule(ctx context.Context, sc *agentrunnerv1.Schedule) error {
	if err := store.CheckSchedule(sc, checkPart); err != nil {
		return err
	}
	v, err := proto.Marshal(sc)
	if err != nil {
		return fmt.Errorf("encode schedule: %w", err)
	}
	k := appendString(nil, sc.GetScheduleId())
	return s.write(ctx, func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bucketSchedules); b != nil && b.Get(k) != nil {
			return fmt.Errorf("schedule %s: %w", sc.GetScheduleId(), store.ErrAlreadyExists)
		}
		b, err := tx.CreateBucketIfNotExists(bucketSchedules)
		if err != nil {
			return abortError{err}
		}
		return put(b, k, v)
	})
}

// GetSchedule implements store.ScheduleStore.
func (s *Store) GetSchedule(ctx context.Context, id string) (*agentrunnerv1.Schedule, error) {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return nil, err
	}
	sc := &agentrunnerv1.Schedule{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketSchedules); b != nil {
			v = b.Get(appendString(nil, id))
		}
		if v == nil {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		}
		return proto.Unmarshal(v, sc)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context, app string) ([]*agentrunnerv1.Schedule, error) {
	var out []*agentrunnerv1.Schedule
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			sc := &agentrunnerv1.Schedule{}
			if err := proto.Unmarshal(v, sc); err != nil {
				return fmt.Errorf("decode schedule: %w", err)
			}
			if app == "" || sc.GetAppName() == app {
				out = append(out, sc)
			}
			return nil
		})
	})
	return out, err
}

// DeleteSchedule implements store.ScheduleStore.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return err
	}
	k := appendString(nil, id)
	return s.write(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		if b == nil || b.Get(k) == nil {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		}
		if err := del(b, k); err != nil {
			return err
		}
		if st := tx.Bucket(bucketScheduleState); st != nil {
			if err := del(st, k); err != nil {
				return err
			}
		}
		fb := tx.Bucket(bucketScheduleFires)
		if fb == nil {
			return nil
		}
		var keys [][]byte
		c := fb.Cursor()
		for fk, _ := c.Seek(k); fk != nil && bytes.HasPrefix(fk, k); fk, _ = c.Next() {
			keys = append(keys, bytes.Clone(fk))
		}
		for _, fk := range keys {
			if err := del(fb, fk); err != nil {
				return err
			}
		}
		return nil
	})
}

func readState(tx *bbolt.Tx, k []byte) (scheduleState, bool, error) {
	var st scheduleState
	b := tx.Bucket(bucketScheduleState)
	if b == nil {
		return st, false, nil
	}
	v := b.Get(k)
	if v == nil {
		return st, false, nil
	}
	if err := json.Unmarshal(v, &st); err != nil {
		return st, false, fmt.Errorf("decode schedule state: %w", err)
	}
	return st, true, nil
}

func writeJSON(tx *bbolt.Tx, bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	b, err := tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return abortError{err}
	}
	return put(b, k, data)
}

// StartSchedule implements store.ScheduleStore.
func (s *Store) StartSchedule(ctx context.Context, id string, from time.Time) (time.Time, error) {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return time.Time{}, err
	}
	k := appendString(nil, id)
	var cursor int64
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		st, ok, err := readState(tx, k)
		if err != nil || ok {
			cursor = st.Cursor
			return err
		}
		cursor = from.UnixNano()
		return writeJSON(tx, bucketScheduleState, k, scheduleState{Cursor: cursor})
	})
	return time.Unix(0, cursor).UTC(), err
}

// ClaimFire implements store.ScheduleStore.
func (s *Store) ClaimFire(ctx context.Context, id string, at time.Time, holder string) error {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return err
	}
	k, n := appendString(nil, id), at.UnixNano()
	return s.write(ctx, func(tx *bbolt.Tx) error {
		st, ok, err := readState(tx, k)
		if err != nil {
			return err
		}
		if ok && n <= st.Cursor {
			return fmt.Errorf("schedule %s time %s: decided already (cursor %s): %w", id, at.UTC().Format(time.RFC3339Nano), time.Unix(0, st.Cursor).UTC().Format(time.RFC3339Nano), store.ErrAlreadyExists)
		}
		f := fireRecord{Time: n, Holder: holder}
		if err := writeJSON(tx, bucketScheduleFires, fireKey(id, n), f); err != nil {
			return err
		}
		return writeJSON(tx, bucketScheduleState, k, scheduleState{Cursor: n, Last: f})
	})
}

// SkipTo implements store.ScheduleStore.
func (s *Store) SkipTo(ctx context.Context, id string, at time.Time) error {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return err
	}
	k, n := appendString(nil, id), at.UnixNano()
	return s.write(ctx, func(tx *bbolt.Tx) error {
		st, ok, err := readState(tx, k)
		if err != nil || (ok && n <= st.Cursor) {
			return err
		}
		st.Cursor = n
		return writeJSON(tx, bucketScheduleState, k, st)
	})
}

// FinishFire implements store.ScheduleStore.
func (s *Store) FinishFire(ctx context.Context, id string, at time.Time, runID, errText string) error {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return err
	}
	k, n := appendString(nil, id), at.UnixNano()
	return s.write(ctx, func(tx *bbolt.Tx) error {
		fb := tx.Bucket(bucketScheduleFires)
		var v []byte
		if fb != nil {
			v = fb.Get(fireKey(id, n))
		}
		if v == nil {
			return fmt.Errorf("schedule %s time %s: not claimed: %w", id, at.UTC().Format(time.RFC3339Nano), store.ErrNotFound)
		}
		var f fireRecord
		if err := json.Unmarshal(v, &f); err != nil {
			return fmt.Errorf("decode fire: %w", err)
		}
		f.Finished, f.RunID, f.Error = true, runID, errText
		st, ok, err := readState(tx, k)
		if err != nil {
			return err
		}
		if err := writeJSON(tx, bucketScheduleFires, fireKey(id, n), f); err != nil {
			return err
		}
		if ok && st.Last.Time == n {
			st.Last = f
			return writeJSON(tx, bucketScheduleState, k, st)
		}
		return nil
	})
}

// ScheduleState implements store.ScheduleStore.
func (s *Store) ScheduleState(ctx context.Context, id string) (store.ScheduleState, error) {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return store.ScheduleState{}, err
	}
	var out store.ScheduleState
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		st, ok, err := readState(tx, appendString(nil, id))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("schedule %s has no state: %w", id, store.ErrNotFound)
		}
		out = store.ScheduleState{Cursor: time.Unix(0, st.Cursor).UTC(), Last: st.Last.fire(id)}
		return nil
	})
	return out, err
}

// ListFires implements store.ScheduleStore.
func (s *Store) ListFires(ctx context.Context, id string, limit int) ([]store.ScheduleFire, error) {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return nil, err
	}
	limit = store.Page{Size: limit}.Limit()
	var out []store.ScheduleFire
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		fb := tx.Bucket(bucketScheduleFires)
		if fb == nil {
			return nil
		}
		p := appendString(nil, id)
		c := fb.Cursor()
		k, v := c.Seek(successor(p))
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Prev() {
			var f fireRecord
			if err := json.Unmarshal(v, &f); err != nil {
				return fmt.Errorf("decode fire: %w", err)
			}
			out = append(out, f.fire(id))
		}
		return nil
	})
	return out, err
}

// SetSchedulePaused implements store.ScheduleStore.
func (s *Store) SetSchedulePaused(ctx context.Context, id string, paused bool) (*agentrunnerv1.Schedule, error) {
	if err := store.CheckScheduleID(id, checkPart); err != nil {
		return nil, err
	}
	k := appendString(nil, id)
	sc := &agentrunnerv1.Schedule{}
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSchedules)
		var v []byte
		if b != nil {
			v = b.Get(k)
		}
		if v == nil {
			return fmt.Errorf("schedule %s: %w", id, store.ErrNotFound)
		}
		if err := proto.Unmarshal(v, sc); err != nil {
			return fmt.Errorf("decode schedule: %w", err)
		}
		sc.Paused = paused
		nv, err := proto.Marshal(sc)
		if err != nil {
			return fmt.Errorf("encode schedule: %w", err)
		}
		return put(b, k, nv)
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}
