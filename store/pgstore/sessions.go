package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// CreateSession implements store.Store.
func (s *Store) CreateSession(ctx context.Context, k store.SessionKey, state *structpb.Struct) (*agentrunnerv1.Session, error) {
	if k.Session == "" {
		k.Session = s.opts.NewID()
	}
	if err := validateKey(k); err != nil {
		return nil, err
	}
	sessDelta, appDelta, userDelta := store.SplitDelta(state)
	now := timestamppb.New(s.opts.Now())
	rec := &agentrunnerv1.Session{
		AppName: k.App, UserId: k.User, SessionId: k.Session,
		State:      &structpb.Struct{Fields: map[string]*structpb.Value{}},
		CreateTime: now, UpdateTime: now,
	}
	store.ApplyDelta(rec.State, sessDelta)
	recBytes, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal session: %w", err)
	}
	if err := store.CheckSize("session state", len(recBytes), s.opts.MaxItemBytes); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Session
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO sessions (app_name, user_id, session_id, record) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, k.App, k.User, k.Session, recBytes)
		if err != nil {
			return fmt.Errorf("insert session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		appState, userState, err := s.applyShared(ctx, tx, k, true, appDelta, userDelta)
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

// sharedScope is one of the shared state tables, addressed by its key.
type sharedScope struct {
	what         string // for errors: "app state", "user state"
	sel, ins, up string // SELECT ... FOR UPDATE, INSERT, UPDATE by key
	args         []any  // the key
}

func appScope(k store.SessionKey) sharedScope {
	return sharedScope{
		what: "app state",
		sel:  "SELECT state FROM app_state WHERE app_name = $1 FOR UPDATE",
		ins:  "INSERT INTO app_state (app_name, state) VALUES ($1, $2) ON CONFLICT DO NOTHING",
		up:   "UPDATE app_state SET state = $2 WHERE app_name = $1",
		args: []any{k.App},
	}
}

func userScope(k store.SessionKey) sharedScope {
	return sharedScope{
		what: "user state",
		sel:  "SELECT state FROM user_state WHERE app_name = $1 AND user_id = $2 FOR UPDATE",
		ins:  "INSERT INTO user_state (app_name, user_id, state) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
		up:   "UPDATE user_state SET state = $3 WHERE app_name = $1 AND user_id = $2",
		args: []any{k.App, k.User},
	}
}

// applyShared applies the app and user parts of a delta, app first (the
// lock order every writer keeps), and returns the resulting shared
// states; with needShared, it reads them even when the delta leaves them
// alone.
func (s *Store) applyShared(ctx context.Context, tx pgx.Tx, k store.SessionKey, needShared bool, appDelta, userDelta map[string]*structpb.Value) (appState, userState *structpb.Struct, err error) {
	if len(appDelta) == 0 && len(userDelta) == 0 && !needShared {
		return nil, nil, nil // the common append: nothing shared to read or write
	}
	if appState, err = s.applyScope(ctx, tx, appScope(k), appDelta); err != nil {
		return nil, nil, err
	}
	if userState, err = s.applyScope(ctx, tx, userScope(k), userDelta); err != nil {
		return nil, nil, err
	}
	return appState, userState, nil
}

// applyScope reads one shared state, locked when delta changes it, and
// writes it back changed. A missing row is inserted; when another
// transaction inserts it first, the insert does nothing and the loop
// reads (and locks) that row instead, so that no update is lost.
func (s *Store) applyScope(ctx context.Context, tx pgx.Tx, sc sharedScope, delta map[string]*structpb.Value) (*structpb.Struct, error) {
	sel := sc.sel
	if len(delta) == 0 {
		sel = strings.TrimSuffix(sel, " FOR UPDATE")
	}
	for range 3 {
		var b []byte
		found := true
		if err := tx.QueryRow(ctx, sel, sc.args...).Scan(&b); errors.Is(err, pgx.ErrNoRows) {
			found = false
		} else if err != nil {
			return nil, fmt.Errorf("read %s: %w", sc.what, err)
		}
		st, err := decodeStruct(b)
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", sc.what, err)
		}
		if !store.ApplyDelta(st, delta) {
			return st, nil
		}
		nb, err := proto.Marshal(st)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", sc.what, err)
		}
		if err := store.CheckSize(sc.what, len(nb), s.opts.MaxItemBytes); err != nil {
			return nil, err
		}
		q := sc.up
		if !found {
			q = sc.ins
		}
		tag, err := tx.Exec(ctx, q, append(slices.Clone(sc.args), nb)...)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", sc.what, err)
		}
		if tag.RowsAffected() == 1 {
			return st, nil
		}
	}
	return nil, fmt.Errorf("write %s: the row keeps appearing and vanishing", sc.what)
}

func decodeStruct(b []byte) (*structpb.Struct, error) {
	st := &structpb.Struct{}
	if err := proto.Unmarshal(b, st); err != nil {
		return nil, err
	}
	if st.Fields == nil {
		st.Fields = map[string]*structpb.Value{}
	}
	return st, nil
}

func decodeSession(b []byte) (*agentrunnerv1.Session, error) {
	rec := &agentrunnerv1.Session{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return nil, fmt.Errorf("decode session: %w", err)
	}
	return rec, nil
}

// readSession reads a session with its shared states merged in, in one
// query.
func readSession(ctx context.Context, q querier, k store.SessionKey) (*agentrunnerv1.Session, error) {
	const sel = `SELECT s.record, a.state, u.state FROM sessions s
		LEFT JOIN app_state a ON a.app_name = s.app_name
		LEFT JOIN user_state u ON u.app_name = s.app_name AND u.user_id = s.user_id
		WHERE s.app_name = $1 AND s.user_id = $2 AND s.session_id = $3`
	var rec, app, user []byte
	if err := q.QueryRow(ctx, sel, k.App, k.User, k.Session).Scan(&rec, &app, &user); errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", k, store.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("read session %s: %w", k, err)
	}
	sess, err := decodeSession(rec)
	if err != nil {
		return nil, err
	}
	appState, err := decodeStruct(app)
	if err != nil {
		return nil, fmt.Errorf("decode app state: %w", err)
	}
	userState, err := decodeStruct(user)
	if err != nil {
		return nil, fmt.Errorf("decode user state: %w", err)
	}
	return store.MergeState(sess, appState, userState), nil
}

// querier is what reads need of a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// GetSession implements store.Store. The events are read after the
// session, up to its last sequence: events are never changed once
// appended, so the two reads agree without a transaction.
func (s *Store) GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	if err := validateKey(k); err != nil {
		return nil, nil, err
	}
	var (
		sess   *agentrunnerv1.Session
		events []*agentrunnerv1.Event
	)
	err := s.query(ctx, func() error {
		var err error
		if sess, err = readSession(ctx, s.pool, k); err != nil {
			return err
		}
		events, err = s.sessionEvents(ctx, k, sess.GetLastSequence(), opts)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return sess, events, nil
}

// sessionEvents reads the events GetSession returns for opts, of session
// k whose last sequence is last. With a count or a byte bound it walks
// back from the newest event, so that what it keeps is the newest. A
// time filter tests each event of the range (callers may set timestamps,
// so they need not grow with the sequence).
func (s *Store) sessionEvents(ctx context.Context, k store.SessionKey, last uint64, opts store.GetOptions) ([]*agentrunnerv1.Event, error) {
	var events []*agentrunnerv1.Event
	if opts.AfterSequence >= last {
		return nil, nil
	}
	f := opts.Filter()
	if opts.NumRecentEvents <= 0 && opts.MaxBytes <= 0 {
		err := s.walkEvents(ctx, k, f, last, false, func(_ uint64, v []byte) (bool, error) {
			ev, err := store.DecodeEvent(v)
			events = append(events, ev)
			return true, err
		})
		return events, err
	}
	n := last - opts.AfterSequence
	if opts.NumRecentEvents > 0 {
		n = min(n, uint64(opts.NumRecentEvents))
	}
	if f.AfterTime == nil {
		// The n newest events are the range's last n.
		f.AfterSequence = last - n
	}
	budget := opts.MaxBytes
	err := s.walkEvents(ctx, k, f, last, true, func(_ uint64, v []byte) (bool, error) {
		if opts.MaxBytes > 0 {
			if budget -= store.ItemBytes(len(v)); budget < 0 {
				return false, nil
			}
		}
		ev, err := store.DecodeEvent(v)
		events = append(events, ev)
		return uint64(len(events)) < n, err
	})
	// oldest first
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events, err
}

// walkEvents reads events in chunks, the first of firstChunk rows, each
// next one twice as large up to maxChunk: a walk that a count or a byte
// bound ends early reads little more than it keeps, and a long walk
// takes few round trips.
const (
	firstChunk = 32
	maxChunk   = 4096
)

// walkEvents calls fn with the events of session k that f selects with
// sequences up to hi, ascending (or descending with desc), until fn
// returns false. The time test is made twice: in SQL on event_time,
// which holds the timestamp to the microsecond (rounded down), so that
// it keeps a few events too many at most, and then exactly on the
// event's own timestamp.
func (s *Store) walkEvents(ctx context.Context, k store.SessionKey, f store.EventFilter, hi uint64, desc bool, fn func(seq uint64, v []byte) (bool, error)) error {
	q := `SELECT sequence, record FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
		AND sequence > $4 AND sequence <= $5 AND ($7::timestamptz IS NULL OR event_time >= $7) ORDER BY sequence LIMIT $6`
	if desc {
		q = strings.Replace(q, "ORDER BY sequence", "ORDER BY sequence DESC", 1)
	}
	var since *time.Time
	if f.AfterTime != nil {
		t := f.AfterTime.Truncate(time.Microsecond)
		since = &t
	}
	lo := f.AfterSequence
	for chunk := firstChunk; lo < hi; chunk = min(2*chunk, maxChunk) {
		rows, err := s.pool.Query(ctx, q, k.App, k.User, k.Session, int64(lo), int64(hi), chunk, since)
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		n := 0
		more := true
		var seq int64
		var v []byte
		_, err = pgx.ForEachRow(rows, []any{&seq, &v}, func() error {
			n++
			if !more {
				return nil
			}
			if desc {
				hi = uint64(seq) - 1
			} else {
				lo = uint64(seq)
			}
			if keep, err := f.KeepsEncoded(v); err != nil || !keep {
				return err
			}
			var err error
			more, err = fn(uint64(seq), v)
			return err
		})
		if err != nil {
			return err
		}
		if !more || n < chunk {
			return nil
		}
	}
	return nil
}

// ListSessions implements store.Store.
func (s *Store) ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, "", err
	}
	after := sessionToken{App: app}
	if page.Token != "" {
		if err := decodeToken(page.Token, &after); err != nil {
			return nil, "", err
		}
		if after.App != app || (user != "" && after.User != user) || after.Session == "" {
			return nil, "", fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
		}
	}
	// With a user, a plain equality: the scan is of the user's key range.
	userCond := "($2 = '' OR s.user_id = $2)"
	if user != "" {
		userCond = "s.user_id = $2"
	}
	q := `SELECT s.record, u.state FROM sessions s
		LEFT JOIN user_state u ON u.app_name = s.app_name AND u.user_id = s.user_id
		WHERE s.app_name = $1 AND ` + userCond + ` AND (s.user_id, s.session_id) > ($3, $4)
		ORDER BY s.user_id, s.session_id LIMIT $5`
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.Session
		next string
	)
	err := s.query(ctx, func() error {
		var appB []byte
		err := s.pool.QueryRow(ctx, "SELECT state FROM app_state WHERE app_name = $1", app).Scan(&appB)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read app state: %w", err)
		}
		appState, err := decodeStruct(appB)
		if err != nil {
			return fmt.Errorf("decode app state: %w", err)
		}
		rows, err := s.pool.Query(ctx, q, app, user, after.User, after.Session, limit+1)
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		var rec, userB []byte
		size := 0
		_, err = pgx.ForEachRow(rows, []any{&rec, &userB}, func() error {
			if next != "" {
				return nil
			}
			sess, err := decodeSession(rec)
			if err != nil {
				return err
			}
			userState, err := decodeStruct(userB)
			if err != nil {
				return fmt.Errorf("decode user state: %w", err)
			}
			merged := store.MergeState(sess, appState, userState)
			// The merged state counts: app and user state come with
			// every session of the page.
			size += store.ItemBytes(proto.Size(merged))
			if len(out) == limit || (page.MaxBytes > 0 && size > page.MaxBytes && len(out) > 0) {
				last := out[len(out)-1]
				next = encodeToken(sessionToken{App: app, User: last.GetUserId(), Session: last.GetSessionId()})
				return nil
			}
			out = append(out, merged)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// DeleteSession implements store.Store. Its events, ledger and run
// records go with its row (ON DELETE CASCADE); its own artifacts are
// deleted here, the user's stay.
func (s *Store) DeleteSession(ctx context.Context, k store.SessionKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3", k.App, k.User, k.Session)
		if err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM artifacts WHERE app_name = $1 AND user_id = $2 AND scope = $3", k.App, k.User, k.Session); err != nil {
			return fmt.Errorf("delete artifacts: %w", err)
		}
		return nil
	})
}
