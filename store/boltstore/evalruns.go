package boltstore

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// bucketEvalRuns holds evaluation results: key (app, user, eval_run_id)
// as strings (keys.go), value the EvalRun record (protobuf). The bucket
// is created by the first write rather than by Open, so that adding it
// needs no schema version: an older binary ignores it, and a file without
// it has no evaluations. Listing reads an app's (or user's) records and
// sorts them by create_time: evaluations are few next to runs.
var bucketEvalRuns = []byte("eval_runs")

func evalRunKey(app, user, id string) []byte {
	return appendString(appendString(appendString(nil, app), user), id)
}

var _ store.EvalRunStore = (*Store)(nil)

// CreateEvalRun implements store.EvalRunStore.
func (s *Store) CreateEvalRun(ctx context.Context, r *agentrunnerv1.EvalRun) error {
	if _, err := store.CheckEvalRun(r, checkPart); err != nil {
		return err
	}
	v, err := r.MarshalVT()
	if err != nil {
		return fmt.Errorf("encode eval run %s: %w", r.GetEvalRunId(), err)
	}
	if s.opts.MaxItemBytes > 0 && store.ItemBytes(len(v)) > s.opts.MaxItemBytes {
		return fmt.Errorf("eval run of %d bytes exceeds the limit of %d bytes: %w", len(v), s.opts.MaxItemBytes, store.ErrInvalidArgument)
	}
	key := evalRunKey(r.GetAppName(), r.GetUserId(), r.GetEvalRunId())
	return s.write(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketEvalRuns)
		if err != nil {
			return fmt.Errorf("create bucket %s: %w", bucketEvalRuns, err)
		}
		if b.Get(key) != nil {
			return fmt.Errorf("eval run %s: %w", r.GetEvalRunId(), store.ErrAlreadyExists)
		}
		return b.Put(key, v)
	})
}

// GetEvalRun implements store.EvalRunStore.
func (s *Store) GetEvalRun(ctx context.Context, app, user, id string) (*agentrunnerv1.EvalRun, error) {
	if err := store.CheckEvalRunKey(app, user, id, checkPart); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.EvalRun
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var v []byte
		if b := tx.Bucket(bucketEvalRuns); b != nil {
			v = b.Get(evalRunKey(app, user, id))
		}
		if v == nil {
			return fmt.Errorf("eval run %s: %w", id, store.ErrNotFound)
		}
		out = &agentrunnerv1.EvalRun{}
		return proto.Unmarshal(v, out)
	})
	return out, err
}

// ListEvalRuns implements store.EvalRunStore.
func (s *Store) ListEvalRuns(ctx context.Context, app, user string, limit int) ([]*agentrunnerv1.EvalRun, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, err
	}
	prefix := appendString(nil, app)
	if user != "" {
		prefix = appendString(prefix, user)
	}
	var out []*agentrunnerv1.EvalRun
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketEvalRuns)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		end := successor(prefix)
		for k, v := c.Seek(prefix); k != nil && string(k) < string(end); k, v = c.Next() {
			r := &agentrunnerv1.EvalRun{}
			if err := proto.Unmarshal(v, r); err != nil {
				return fmt.Errorf("decode eval run: %w", err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return store.SortEvalRuns(out, limit), nil
}
