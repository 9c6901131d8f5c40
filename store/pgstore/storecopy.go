package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storecopy"
)

// The export and import of store/storecopy (agentrunner migrate-store):
// the rows as stored. Leases, the run queue and spend holds are not
// copied (see package storecopy).
var _ storecopy.Target = (*Store)(nil)

// SessionKeys implements storecopy.Source, in the order of the key
// columns (COLLATE "C": bytewise, as bbolt's keys).
func (s *Store) SessionKeys(ctx context.Context, after store.SessionKey, limit int) ([]store.SessionKey, error) {
	var keys []store.SessionKey
	err := s.query(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT app_name, user_id, session_id FROM sessions
			WHERE (app_name, user_id, session_id) > ($1, $2, $3) ORDER BY app_name, user_id, session_id LIMIT $4`,
			after.App, after.User, after.Session, limit)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SessionKey, error) {
			var k store.SessionKey
			return k, r.Scan(&k.App, &k.User, &k.Session)
		})
		return err
	})
	return keys, err
}

// ExportSession implements storecopy.Source: one repeatable-read
// transaction, so that the rows are of one moment.
func (s *Store) ExportSession(ctx context.Context, k store.SessionKey) (*storecopy.Session, error) {
	out := &storecopy.Session{Key: k}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var rec []byte
		err := tx.QueryRow(ctx, `SELECT record, EXISTS (SELECT 1 FROM memory_sessions m WHERE m.app_name = s.app_name
			AND m.user_id = s.user_id AND m.session_id = s.session_id)
			FROM sessions s WHERE app_name = $1 AND user_id = $2 AND session_id = $3`, k.App, k.User, k.Session).Scan(&rec, &out.InMemory)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if out.Record, err = decodeSession(rec); err != nil {
			return err
		}
		return exportRows(ctx, tx, k, out)
	})
	if err != nil {
		return nil, fmt.Errorf("export session %s: %w", k, err)
	}
	return out, nil
}

// exportRows reads the session's events, tool calls, runs and artifacts.
func exportRows(ctx context.Context, tx pgx.Tx, k store.SessionKey, out *storecopy.Session) error {
	args := []any{k.App, k.User, k.Session}
	var err error
	if out.Events, err = collectProto[*agentrunnerv1.Event](ctx, tx, `SELECT record FROM events
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY sequence`, args...); err != nil {
		return err
	}
	if out.ToolCalls, err = collectProto[*agentrunnerv1.ToolCall](ctx, tx, `SELECT record FROM tool_calls
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY call_id`, args...); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT record, anchor FROM runs
		WHERE app_name = $1 AND user_id = $2 AND session_id = $3 ORDER BY run_id`, args...)
	if err != nil {
		return err
	}
	if out.Runs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (storecopy.Run, error) {
		var b []byte
		var anchor int64
		run := storecopy.Run{Record: &agentrunnerv1.Run{}}
		if err := r.Scan(&b, &anchor); err != nil {
			return run, err
		}
		run.Anchor = uint64(anchor)
		return run, proto.Unmarshal(b, run.Record)
	}); err != nil {
		return err
	}
	as, err := exportArtifacts(ctx, tx, `WHERE app_name = $1 AND user_id = $2 AND scope = $3`, args...)
	for _, a := range as {
		out.Artifacts = append(out.Artifacts, a.Artifact)
	}
	return err
}

// collectProto reads one bytea column of protobuf messages of type M.
func collectProto[M interface {
	proto.Message
	*T
}, T any](ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]M, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (M, error) {
		var b []byte
		m := M(new(T))
		if err := r.Scan(&b); err != nil {
			return m, err
		}
		return m, proto.Unmarshal(b, m)
	})
}

// exportArtifacts reads the artifact versions the where clause selects.
func exportArtifacts(ctx context.Context, tx pgx.Tx, where string, args ...any) ([]storecopy.UserArtifact, error) {
	rows, err := tx.Query(ctx, `SELECT app_name, user_id, filename, meta, part FROM artifacts `+where+
		` ORDER BY app_name, user_id, scope, filename, version`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (storecopy.UserArtifact, error) {
		var meta, part []byte
		a := storecopy.UserArtifact{Artifact: storecopy.Artifact{Meta: &agentrunnerv1.ArtifactVersion{}, Part: &agentrunnerv1.Part{}}}
		if err := r.Scan(&a.App, &a.User, &a.Filename, &meta, &part); err != nil {
			return a, err
		}
		return a, errors.Join(proto.Unmarshal(meta, a.Meta), proto.Unmarshal(part, a.Part))
	})
}

// readTx runs fn in a read-only repeatable-read transaction.
func (s *Store) readTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.query(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
	})
}

// ImportSession implements storecopy.Target: one transaction, which also
// indexes the session's events for memory when it is in memory.
func (s *Store) ImportSession(ctx context.Context, in *storecopy.Session) error {
	k := in.Key
	if err := validateKey(k); err != nil {
		return err
	}
	runs := make([]*runWrite, len(in.Runs))
	for i, r := range in.Runs {
		w, err := prepareRun(r.Record)
		if err != nil {
			return err
		}
		runs[i] = w
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		rec, err := proto.Marshal(in.Record)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (app_name, user_id, session_id, record, last_sequence) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT DO NOTHING`, k.App, k.User, k.Session, rec, int64(in.Record.GetLastSequence()))
		if err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		if err := importRows(ctx, tx, in); err != nil {
			return err
		}
		for i, w := range runs {
			w.copied = true // the source's run called back already
			if _, err := putRunTx(ctx, tx, w, in.Runs[i].Anchor, 0); err != nil {
				return err
			}
		}
		if !in.InMemory {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_sessions (app_name, user_id, session_id) VALUES ($1, $2, $3)`, k.App, k.User, k.Session); err != nil {
			return fmt.Errorf("add session to memory: %w", err)
		}
		return indexEvents(ctx, tx, k)
	})
}

// importRows inserts the session's events, tool calls and artifacts, in
// one batch (one round trip).
func importRows(ctx context.Context, tx pgx.Tx, in *storecopy.Session) error {
	k := in.Key
	b := &pgx.Batch{}
	for _, ev := range in.Events {
		v, err := proto.Marshal(ev)
		if err != nil {
			return err
		}
		b.Queue(sqlInsertEvent, k.App, k.User, k.Session, int64(ev.GetSequence()), ev.GetId(), ev.GetTimestamp().AsTime(), v)
	}
	for _, c := range in.ToolCalls {
		v, err := proto.Marshal(c)
		if err != nil {
			return err
		}
		b.Queue(sqlPutCall, k.App, k.User, k.Session, c.GetCallId(), int64(c.GetCallSequence()), v)
	}
	for _, a := range in.Artifacts {
		if err := queueArtifact(b, k.App, k.User, k.Session, a); err != nil {
			return err
		}
	}
	return tx.SendBatch(ctx, b).Close()
}

func queueArtifact(b *pgx.Batch, app, user, scope string, a storecopy.Artifact) error {
	meta, err := proto.Marshal(a.Meta)
	if err != nil {
		return err
	}
	part, err := proto.Marshal(a.Part)
	if err != nil {
		return err
	}
	b.Queue(`INSERT INTO artifacts (app_name, user_id, scope, filename, version, meta, part) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (app_name, user_id, scope, filename, version) DO UPDATE SET meta = excluded.meta, part = excluded.part`,
		app, user, scope, a.Filename, a.Meta.GetVersion(), meta, part)
	return nil
}

// ExportShared implements storecopy.Source. The spend ledger's shards
// are summed, as DailySpend sums them.
func (s *Store) ExportShared(ctx context.Context) (*storecopy.Shared, error) {
	sh := &storecopy.Shared{}
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT app_name, '', state FROM app_state
			UNION ALL SELECT app_name, user_id, state FROM user_state ORDER BY 1, 2`)
		if err != nil {
			return err
		}
		if err := scanStates(rows, sh); err != nil {
			return err
		}
		if sh.UserArtifacts, err = exportArtifacts(ctx, tx, `WHERE scope = ''`); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT app_name, user_id, day, model, `+spendSums+` FROM spend
			GROUP BY app_name, user_id, day, model ORDER BY app_name, user_id, day, model`)
		if err != nil {
			return err
		}
		sh.Spend, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (storecopy.SpendRow, error) {
			var row storecopy.SpendRow
			var day time.Time
			sp, err := scanSpend(r, &row.App, &row.User, &day, &row.Model)
			row.Spend, row.Day = sp, store.Day(day)
			return row, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export shared records: %w", err)
	}
	return sh, nil
}

// scanStates reads (app, user, state) rows: a user "" is the app's state.
func scanStates(rows pgx.Rows, sh *storecopy.Shared) error {
	_, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var app, user string
		var b []byte
		if err := r.Scan(&app, &user, &b); err != nil {
			return struct{}{}, err
		}
		st := &structpb.Struct{}
		if err := proto.Unmarshal(b, st); err != nil {
			return struct{}{}, err
		}
		if user == "" {
			sh.AppState = append(sh.AppState, storecopy.AppState{App: app, State: st})
		} else {
			sh.UserState = append(sh.UserState, storecopy.UserState{App: app, User: user, State: st})
		}
		return struct{}{}, nil
	})
	return err
}

// ImportShared implements storecopy.Target: one transaction that replaces
// every record sh names (a spend row's shards by one row).
func (s *Store) ImportShared(ctx context.Context, sh *storecopy.Shared) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, a := range sh.AppState {
			v, err := proto.Marshal(a.State)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO app_state (app_name, state) VALUES ($1, $2) ON CONFLICT (app_name) DO UPDATE SET state = excluded.state`, a.App, v)
		}
		for _, u := range sh.UserState {
			v, err := proto.Marshal(u.State)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO user_state (app_name, user_id, state) VALUES ($1, $2, $3)
				ON CONFLICT (app_name, user_id) DO UPDATE SET state = excluded.state`, u.App, u.User, v)
		}
		for _, u := range sh.UserArtifacts {
			if err := queueArtifact(b, u.App, u.User, "", u.Artifact); err != nil {
				return err
			}
		}
		for _, r := range sh.Spend {
			if err := queueSpend(b, r); err != nil {
				return err
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// queueSpend replaces a ledger row's shards by one, shard 0.
func queueSpend(b *pgx.Batch, r storecopy.SpendRow) error {
	day, err := time.Parse(store.DayLayout, r.Day)
	if err != nil {
		return fmt.Errorf("spend day %q: %w", r.Day, err)
	}
	u, c := r.Spend.GetUsage(), r.Spend.GetCost()
	b.Queue(`DELETE FROM spend WHERE app_name = $1 AND user_id = $2 AND day = $3 AND model = $4`, r.App, r.User, day, r.Model)
	b.Queue(`INSERT INTO spend (app_name, user_id, day, model, prompt_tokens, candidates_tokens, thoughts_tokens, cached_content_tokens,
		tool_use_prompt_tokens, total_tokens, cache_creation_tokens, micros, unpriced_calls, currency, calls, shard)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 0)`,
		r.App, r.User, day, r.Model, int64(u.GetPromptTokenCount()), int64(u.GetCandidatesTokenCount()), int64(u.GetThoughtsTokenCount()),
		int64(u.GetCachedContentTokenCount()), int64(u.GetToolUsePromptTokenCount()), r.Spend.GetTotalTokens(),
		int64(u.GetCacheCreationTokenCount()), c.GetMicros(), c.GetUnpricedCalls(), c.GetCurrency(), r.Spend.GetModelCalls())
	return nil
}
