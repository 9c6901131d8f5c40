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
)

// eventWrite is an event ready to be appended: checked and completed
// outside the transaction.
type eventWrite struct {
	stored                         *agentrunnerv1.Event // the copy returned, without its sequence
	sessDelta, appDelta, userDelta map[string]*structpb.Value
	// counted: the event's usage counts toward the session's totals and
	// the ledger, on day (the store's clock when it was prepared, not the
	// event's timestamp, which its author chose). Only the runner's
	// appends count (store.Store's AppendEventOnce).
	counted bool
	day     time.Time
}

// prepareEvent checks an event to append and makes its stored copy: id
// and timestamp set, "temp:" keys removed.
func (s *Store) prepareEvent(k store.SessionKey, ev *agentrunnerv1.Event, counted bool) (eventWrite, error) {
	stored, err := store.StoredEvent(k, ev, checkPart, s.opts.NewID, s.opts.Now)
	if err != nil {
		return eventWrite{}, err
	}
	// PostgreSQL's text holds the ids; bbolt's keys take any bytes.
	if err := checkText(stored.Id); err != nil {
		return eventWrite{}, fmt.Errorf("event id: %w", err)
	}
	for _, id := range callIDs(stored) {
		if err := checkText(id); err != nil {
			return eventWrite{}, fmt.Errorf("function call id: %w", err)
		}
	}
	w := eventWrite{stored: stored, counted: counted && stored.GetUsageMetadata() != nil}
	if w.counted {
		w.day = s.opts.Now()
	}
	w.sessDelta, w.appDelta, w.userDelta = store.SplitDelta(w.stored.GetActions().GetStateDelta())
	// The sequence, set in the transaction, adds at most 11 bytes.
	if err := store.CheckSize("event", proto.Size(w.stored)+11, s.opts.MaxItemBytes); err != nil {
		return eventWrite{}, err
	}
	return w, nil
}

// AppendEvent implements store.Store: the runner's append, whose usage
// counts.
func (s *Store) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	return s.appendEvent(ctx, k, ev, true)
}

// appendEvent appends ev; counted is whether its usage counts (see
// eventWrite).
func (s *Store) appendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, counted bool) (*agentrunnerv1.Event, error) {
	w, err := s.prepareEvent(k, ev, counted)
	if err != nil {
		return nil, err
	}
	if !w.shared() {
		p := &pipeWrite{k: k, ev: &w}
		if err := s.pipelined(ctx, p); err != nil {
			return nil, err
		}
		return p.stored, nil
	}
	var out *agentrunnerv1.Event
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
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

// shared reports whether the event changes "app:" or "user:" state:
// then it is appended by a transaction of single statements (appendTx),
// else pipelined (pipeline.go).
func (w *eventWrite) shared() bool { return len(w.appDelta)+len(w.userDelta) > 0 }

// lockSession reads session k's record and locks its row for the rest of
// tx: the appends of a session wait for each other here. An append under
// a lease (store.WithLease) is refused here once the lease was taken.
func lockSession(ctx context.Context, tx pgx.Tx, k store.SessionKey) (*agentrunnerv1.Session, error) {
	var (
		b     []byte
		token int64
	)
	var last int64
	err := tx.QueryRow(ctx, sqlLockSession, k.App, k.User, k.Session).Scan(&b, &token, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", k, store.ErrNotFound)
	} else if err != nil {
		return nil, fmt.Errorf("lock session %s: %w", k, err)
	}
	if err := checkFence(ctx, k, token); err != nil {
		return nil, err
	}
	return decodeSession(b)
}

// appendTx appends w to session k, whose record sess tx has locked, and
// returns the stored event (a copy of its own).
func (s *Store) appendTx(ctx context.Context, tx pgx.Tx, k store.SessionKey, sess *agentrunnerv1.Session, w eventWrite) (*agentrunnerv1.Event, error) {
	seq := sess.GetLastSequence() + 1
	recBytes, err := s.nextSession(sess, seq, w)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", k, err)
	}
	stored := w.stored.CloneVT()
	stored.Sequence = seq
	evBytes, err := proto.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("marshal event: %w", err)
	}
	if _, _, err := s.applyShared(ctx, tx, k, false, w.appDelta, w.userDelta); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, sqlInsertEvent, k.App, k.User, k.Session, int64(seq), stored.GetId(), stored.GetTimestamp().AsTime(), evBytes)
	if err != nil {
		return nil, fmt.Errorf("insert event: %w", err)
	}
	if args, ok := indexArgs(k, seq, stored); ok {
		if _, err := tx.Exec(ctx, sqlIndexEvent, args...); err != nil {
			return nil, fmt.Errorf("index event: %w", err)
		}
	}
	if err := recordToolCalls(ctx, tx, k, seq, stored); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, sqlUpdateSession, k.App, k.User, k.Session, recBytes, int64(seq))
	if err != nil {
		return nil, fmt.Errorf("update session: %w", err)
	}
	// Last of the writes: the ledger's rows are shared by the user's and
	// the app's appends, and stay locked until the commit.
	if err := addSpend(ctx, tx, k, stored, w); err != nil {
		return nil, err
	}
	if err := notifyTx(ctx, tx, chanRun, runPayload(stored.GetInvocationId(), seq)); err != nil {
		return nil, err
	}
	return stored, nil
}

// nextSession returns the encoded session record after an append of w
// with sequence seq: last_sequence, update_time and the usage and cost
// totals set, a compaction's end kept (never moving back), and w's
// session-scoped state changes applied.
func (s *Store) nextSession(rec *agentrunnerv1.Session, seq uint64, w eventWrite) ([]byte, error) {
	rec = rec.CloneVT()
	if compaction := w.stored.GetActions().GetCompaction(); compaction != nil {
		// A compaction summarizes events before it: known, stored ones.
		if start, end := compaction.GetStartSequence(), compaction.GetEndSequence(); start == 0 || start > end || end >= seq {
			return nil, fmt.Errorf("actions.compaction: range %d..%d must be within the session's earlier events (1..%d): %w", start, end, seq-1, store.ErrInvalidArgument)
		}
		rec.CompactedSequence = max(rec.CompactedSequence, compaction.GetEndSequence())
	}
	rec.LastSequence, rec.UpdateTime = seq, w.stored.GetTimestamp()
	if w.counted {
		rec.Usage = store.AddUsage(rec.Usage, w.stored.GetUsageMetadata())
		rec.Cost = store.AddEventCost(rec.Cost, w.stored)
		rec.TotalTokens += store.EventTokens(w.stored)
	}
	if len(w.sessDelta) > 0 {
		if rec.State == nil {
			rec.State = &structpb.Struct{}
		}
		store.ApplyDelta(rec.State, w.sessDelta)
	}
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal session: %w", err)
	}
	if err := store.CheckSize("session state", len(b), s.opts.MaxItemBytes); err != nil {
		return nil, err
	}
	return b, nil
}

// AppendEventOnce implements store.Store: the client's append, stored as
// given, whose usage counts toward nothing. The id is looked for among the
// session's events while its row is locked, so that two retries of one
// event never both append it.
func (s *Store) AppendEventOnce(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, bool, error) {
	if ev.GetId() == "" {
		stored, err := s.appendEvent(ctx, k, ev, false)
		return stored, false, err
	}
	w, err := s.prepareEvent(k, ev, false)
	if err != nil {
		return nil, false, err
	}
	if !w.shared() {
		p := &pipeWrite{k: k, ev: &w, onceID: ev.GetId()}
		if err := s.pipelined(ctx, p); err != nil {
			return nil, false, err
		}
		if p.found != nil {
			return duplicate(p.found, ev, w)
		}
		return p.stored, false, nil
	}
	var (
		out   *agentrunnerv1.Event
		found []byte
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, k)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, sqlFindEventID, k.App, k.User, k.Session, ev.GetId()).Scan(&found)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look for event id: %w", err)
		}
		out, err = s.appendTx(ctx, tx, k, sess, w)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if found == nil {
		return out, false, nil
	}
	return duplicate(found, ev, w)
}

// duplicate answers an append whose id the session holds already, in
// the stored encoding found (store.RepeatedAppend).
func duplicate(found []byte, ev *agentrunnerv1.Event, w eventWrite) (*agentrunnerv1.Event, bool, error) {
	held, err := store.DecodeEvent(found)
	if err != nil {
		return nil, false, err
	}
	return store.RepeatedAppend(held, w.stored, ev)
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, k store.SessionKey, f store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error) {
	if err := validateKey(k); err != nil {
		return nil, "", err
	}
	if page.Token != "" {
		var err error
		if f.AfterSequence, err = decodeNumber(page.Token); err != nil {
			return nil, "", err
		}
	}
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.Event
		next string
	)
	err := s.query(ctx, func() error {
		var last int64
		err := s.pool.QueryRow(ctx, "SELECT last_sequence FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
			k.App, k.User, k.Session).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read session %s: %w", k, err)
		}
		size := 0
		return s.walkEvents(ctx, k, f, uint64(last), false, func(_ uint64, v []byte) (bool, error) {
			size += store.ItemBytes(len(v))
			if len(out) == limit || (page.MaxBytes > 0 && size > page.MaxBytes && len(out) > 0) {
				next = encodeNumber(out[len(out)-1].GetSequence())
				return false, nil
			}
			ev, err := store.DecodeEvent(v)
			out = append(out, ev)
			return true, err
		})
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// The tool-call ledger: table tool_calls, kept by the append transaction.
// A function call opens an entry, its answer closes it.

// SQL of the ledger, shared by the transaction and the pipelined paths.
const (
	// sqlKnownCalls reads the session's entries of some call ids ($4).
	sqlKnownCalls = "SELECT call_id, record FROM tool_calls WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND call_id = ANY($4)"
	// sqlPutCall writes an entry.
	sqlPutCall = `INSERT INTO tool_calls (app_name, user_id, session_id, call_id, call_sequence, record) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (app_name, user_id, session_id, call_id) DO UPDATE SET record = excluded.record`
)

// callIDs returns the ids of ev's function calls and responses; nil for
// most events, which carry none.
func callIDs(ev *agentrunnerv1.Event) []string {
	var ids []string
	for _, p := range ev.GetContent().GetParts() {
		if id := p.GetFunctionCall().GetId(); id != "" {
			ids = append(ids, id)
		}
		if id := p.GetFunctionResponse().GetId(); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// scanKnownCalls reads the result of sqlKnownCalls.
func scanKnownCalls(rows pgx.Rows) (map[string]*agentrunnerv1.ToolCall, error) {
	known := map[string]*agentrunnerv1.ToolCall{}
	var (
		id string
		b  []byte
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &b}, func() error {
		rec := &agentrunnerv1.ToolCall{}
		if err := proto.Unmarshal(b, rec); err != nil {
			return fmt.Errorf("decode tool call %q: %w", id, err)
		}
		known[id] = rec
		return nil
	})
	return known, err
}

// ledgerChanges applies ev, stored at seq, to the ledger entries known
// (those of its call ids, changed in place) and returns the arguments of
// sqlPutCall for every entry it opens or closes. A call id is opened
// once (a replay changes nothing). An answer closes a call that does not
// wait for the caller, and one that does only when the caller ("user")
// gives it (an agent's interim response leaves it open); an answer to a
// call unknown or closed changes nothing.
func ledgerChanges(k store.SessionKey, known map[string]*agentrunnerv1.ToolCall, seq uint64, ev *agentrunnerv1.Event) ([][]any, error) {
	var order []string
	changed := map[string]bool{}
	mark := func(id string) {
		if !changed[id] {
			changed[id] = true
			order = append(order, id)
		}
	}
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc.GetId() != "" && known[fc.GetId()] == nil {
			known[fc.GetId()] = store.OpenToolCall(ev, fc, seq)
			mark(fc.GetId())
		}
		fr := p.GetFunctionResponse()
		if rec := known[fr.GetId()]; fr.GetId() != "" && rec != nil && store.CloseToolCall(rec, ev, fr, seq) {
			mark(fr.GetId())
		}
	}
	out := make([][]any, 0, len(order))
	for _, id := range order {
		b, err := proto.Marshal(known[id])
		if err != nil {
			return nil, fmt.Errorf("marshal tool call: %w", err)
		}
		out = append(out, []any{k.App, k.User, k.Session, id, int64(known[id].GetCallSequence()), b})
	}
	return out, nil
}

// recordToolCalls updates the ledger of session k with the function calls
// and responses of ev, stored at its sequence.
func recordToolCalls(ctx context.Context, tx pgx.Tx, k store.SessionKey, seq uint64, ev *agentrunnerv1.Event) error {
	ids := callIDs(ev)
	if len(ids) == 0 {
		return nil // most events: no statement
	}
	rows, err := tx.Query(ctx, sqlKnownCalls, k.App, k.User, k.Session, ids)
	if err != nil {
		return fmt.Errorf("read tool calls: %w", err)
	}
	known, err := scanKnownCalls(rows)
	if err != nil {
		return fmt.Errorf("read tool calls: %w", err)
	}
	puts, err := ledgerChanges(k, known, seq, ev)
	if err != nil {
		return err
	}
	for _, args := range puts {
		if _, err := tx.Exec(ctx, sqlPutCall, args...); err != nil {
			return fmt.Errorf("write tool call %q: %w", args[3], err)
		}
	}
	return nil
}

// ListToolCalls implements store.Store.
func (s *Store) ListToolCalls(ctx context.Context, k store.SessionKey) ([]*agentrunnerv1.ToolCall, error) {
	if err := validateKey(k); err != nil {
		return nil, err
	}
	var out []*agentrunnerv1.ToolCall
	err := s.query(ctx, func() error {
		if err := sessionExists(ctx, s.pool, k); err != nil {
			return err
		}
		rows, err := s.pool.Query(ctx, `SELECT record FROM tool_calls WHERE app_name = $1 AND user_id = $2 AND session_id = $3
			ORDER BY call_sequence, call_id`, k.App, k.User, k.Session)
		if err != nil {
			return fmt.Errorf("list tool calls: %w", err)
		}
		var b []byte
		_, err = pgx.ForEachRow(rows, []any{&b}, func() error {
			rec := &agentrunnerv1.ToolCall{}
			if err := proto.Unmarshal(b, rec); err != nil {
				return fmt.Errorf("decode tool call: %w", err)
			}
			out = append(out, rec)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sessionExists returns ErrNotFound when session k does not exist.
func sessionExists(ctx context.Context, q querier, k store.SessionKey) error {
	var one int
	err := q.QueryRow(ctx, "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3", k.App, k.User, k.Session).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("read session %s: %w", k, err)
	}
	return nil
}
