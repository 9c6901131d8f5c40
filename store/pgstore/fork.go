package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

var _ store.Forker = (*Store)(nil)

// ForkSession implements store.Forker: the session row, its events and
// its artifact versions in one transaction.
func (s *Store) ForkSession(ctx context.Context, f *store.Fork) (*agentrunnerv1.Session, error) {
	k := f.Target
	if k.Session == "" {
		k.Session = s.opts.NewID()
	}
	if err := validateKey(k); err != nil {
		return nil, err
	}
	rec, recBytes, err := s.forkRecord(k, f)
	if err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Session
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (app_name, user_id, session_id, record, last_sequence) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, k.App, k.User, k.Session, recBytes, int64(len(f.Events)))
		if err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		if err := forkRows(ctx, tx, k, f); err != nil {
			return err
		}
		appState, userState, err := s.applyShared(ctx, tx, k, true, nil, nil)
		if err != nil {
			return err
		}
		out = store.MergeState(rec, appState, userState)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forkRecord encodes the fork's session record, checked against the
// store's limit.
func (s *Store) forkRecord(k store.SessionKey, f *store.Fork) (*agentrunnerv1.Session, []byte, error) {
	now := timestamppb.New(s.opts.Now())
	rec := &agentrunnerv1.Session{
		AppName: k.App, UserId: k.User, SessionId: k.Session,
		State:      &structpb.Struct{Fields: map[string]*structpb.Value{}},
		CreateTime: now, UpdateTime: now,
		LastSequence:      uint64(len(f.Events)),
		CompactedSequence: f.CompactedSequence(),
		ForkedFrom:        f.ForkedFrom,
	}
	store.ApplyDelta(rec.State, f.State.GetFields())
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal session: %w", err)
	}
	if err := store.CheckSize("session state", len(b), s.opts.MaxItemBytes); err != nil {
		return nil, nil, err
	}
	return rec, b, nil
}

// forkRows inserts the fork's events and artifact versions, batched.
func forkRows(ctx context.Context, tx pgx.Tx, k store.SessionKey, f *store.Fork) error {
	b := &pgx.Batch{}
	for i, ev := range f.Events {
		ev = ev.CloneVT()
		ev.Sequence = uint64(i + 1)
		evBytes, err := proto.Marshal(ev)
		if err != nil {
			return fmt.Errorf("marshal event: %w", err)
		}
		b.Queue(sqlInsertEvent, k.App, k.User, k.Session, int64(ev.Sequence), ev.GetId(), ev.GetTimestamp().AsTime(), evBytes)
	}
	for _, a := range f.Artifacts {
		meta, err := proto.Marshal(a.Meta)
		if err != nil {
			return fmt.Errorf("marshal artifact version: %w", err)
		}
		part, err := proto.Marshal(a.Part)
		if err != nil {
			return fmt.Errorf("marshal artifact: %w", err)
		}
		name := a.Meta.GetFilename()
		b.Queue(`INSERT INTO artifacts (app_name, user_id, scope, filename, version, meta, part)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.App, k.User, store.ArtifactScope(k, name), name, a.Meta.GetVersion(), meta, part)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("insert fork's events and artifacts: %w", err)
	}
	return nil
}

// AppendRewind implements store.Forker: the restored artifact versions
// and the rewind event in one transaction, which holds the session's row
// lock (the lock every append takes) and is refused while a run of the
// session is active.
func (s *Store) AppendRewind(ctx context.Context, k store.SessionKey, r *store.Rewind) (*agentrunnerv1.Event, error) {
	if err := validateKey(k); err != nil {
		return nil, err
	}
	names := r.RestoreNames()
	versions := make([]*agentrunnerv1.ArtifactVersion, len(names))
	blobs := make([][]byte, len(names))
	for i, name := range names {
		var err error
		if _, versions[i], blobs[i], err = store.NewArtifactVersion(k, name, r.Restore[name], s.opts.Now(), s.opts.MaxItemBytes, checkPart); err != nil {
			return nil, err
		}
	}
	var out *agentrunnerv1.Event
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
		if err != nil {
			return err
		}
		if last := sess.GetLastSequence(); last != r.LastSequence {
			return store.MovedError(k, r.LastSequence, last)
		}
		if err := checkNoLease(ctx, tx, k); err != nil {
			return err
		}
		if err := checkNoActiveRun(ctx, tx, k); err != nil {
			return err
		}
		ev := r.Event.CloneVT()
		if ev.Actions == nil {
			ev.Actions = &agentrunnerv1.EventActions{}
		}
		ev.Actions.ArtifactDelta = make(map[string]int64, len(names))
		for i, name := range names {
			v, err := saveVersionTx(ctx, tx, k, name, versions[i], blobs[i])
			if err != nil {
				return err
			}
			ev.Actions.ArtifactDelta[name] = v
		}
		w, err := s.prepareEvent(k, ev, false)
		if err != nil {
			return err
		}
		out, err = s.appendTx(ctx, tx, k, sess, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// saveVersionTx saves the next version of an artifact in tx, as
// SaveArtifact does, and returns its number.
func saveVersionTx(ctx context.Context, tx pgx.Tx, k store.SessionKey, name string, meta *agentrunnerv1.ArtifactVersion, blob []byte) (int64, error) {
	scope := store.ArtifactScope(k, name)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3 || '/' || $4 || '/' || $5))",
		artifactLockClass, k.App, k.User, scope, name); err != nil {
		return 0, fmt.Errorf("lock artifact: %w", err)
	}
	m := meta.CloneVT()
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) + 1 FROM artifacts
		WHERE app_name = $1 AND user_id = $2 AND scope = $3 AND filename = $4`, k.App, k.User, scope, name).Scan(&m.Version); err != nil {
		return 0, fmt.Errorf("next artifact version: %w", err)
	}
	mb, err := proto.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("marshal artifact version: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO artifacts (app_name, user_id, scope, filename, version, meta, part)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.App, k.User, scope, name, m.Version, mb, blob); err != nil {
		return 0, fmt.Errorf("insert artifact: %w", err)
	}
	return m.Version, nil
}

// checkNoLease refuses with store.ErrFailedPrecondition while session
// k's lease is live: every execution of a run holds it from before it
// reads the session's history (runner/internal/replica), so that a run
// starting on any replica either sees the rewind or refuses it. tx holds
// the session's row lock, which AcquireLease takes too.
func checkNoLease(ctx context.Context, tx pgx.Tx, k store.SessionKey) error {
	var holder *string
	err := tx.QueryRow(ctx, `SELECT lease_holder FROM sessions
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND lease_holder IS NOT NULL AND lease_expires > clock_timestamp()`,
		k.App, k.User, k.Session).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read the lease of %s: %w", k, err)
	}
	return fmt.Errorf("session %s is leased to %s, which runs it: rewind it once the run ends: %w", k, *holder, store.ErrFailedPrecondition)
}

// checkNoActiveRun refuses with store.ErrFailedPrecondition when a run of
// session k is active (its record's status; a record written before the
// status column had one counts by its unfinished mark).
func checkNoActiveRun(ctx context.Context, tx pgx.Tx, k store.SessionKey) error {
	var (
		runID  string
		status *int32
	)
	err := tx.QueryRow(ctx, `SELECT run_id, status FROM runs
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3
		AND (status IN (1, 2, 3) OR (status IS NULL AND unfinished)) LIMIT 1`, k.App, k.User, k.Session).Scan(&runID, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read active runs of %s: %w", k, err)
	}
	st := agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	if status != nil {
		st = agentrunnerv1.RunStatus(*status)
	}
	return store.ActiveRunError(k, runID, st)
}
