package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// userAuthor is the author of the caller's events (agent.UserAuthor; the
// store does not import the runner).
const userAuthor = "user"

// eventWrite is an event ready to be appended: checked and completed
// outside the transaction.
type eventWrite struct {
	stored                         *agentrunnerv1.Event // the copy returned, without its sequence
	sessDelta, appDelta, userDelta map[string]*structpb.Value
}

// prepareEvent checks an event to append and makes its stored copy: id
// and timestamp set, "temp:" keys removed.
func (s *Store) prepareEvent(k store.SessionKey, ev *agentrunnerv1.Event) (eventWrite, error) {
	if err := validateKey(k); err != nil {
		return eventWrite{}, err
	}
	switch {
	case ev == nil:
		return eventWrite{}, fmt.Errorf("event is missing: %w", store.ErrInvalidArgument)
	case ev.GetPartial():
		return eventWrite{}, fmt.Errorf("event is partial; partial events are never stored: %w", store.ErrInvalidArgument)
	}
	w := eventWrite{stored: proto.CloneOf(ev)}
	w.stored.Sequence = 0
	if w.stored.Id == "" {
		w.stored.Id = s.opts.NewID()
	}
	if err := checkText(w.stored.Id); err != nil {
		return eventWrite{}, fmt.Errorf("event id: %w", err)
	}
	if w.stored.Timestamp == nil {
		w.stored.Timestamp = timestamppb.New(s.opts.Now())
	}
	if a := w.stored.GetActions(); a != nil {
		a.StateDelta = store.WithoutTemp(a.StateDelta)
	}
	w.sessDelta, w.appDelta, w.userDelta = store.SplitDelta(w.stored.GetActions().GetStateDelta())
	// The sequence, set in the transaction, adds at most 11 bytes.
	if err := checkSize("event", proto.Size(w.stored)+11, s.opts.MaxItemBytes); err != nil {
		return eventWrite{}, err
	}
	return w, nil
}

// AppendEvent implements store.Store.
func (s *Store) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	w, err := s.prepareEvent(k, ev)
	if err != nil {
		return nil, err
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

// lockSession reads session k's record and locks its row for the rest of
// tx: the appends of a session wait for each other here. An append under
// a lease (store.WithLease) is refused here once the lease was taken.
func lockSession(ctx context.Context, tx pgx.Tx, k store.SessionKey) (*agentrunnerv1.Session, error) {
	var (
		b     []byte
		token int64
	)
	err := tx.QueryRow(ctx, "SELECT record, lease_token FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3 FOR UPDATE",
		k.App, k.User, k.Session).Scan(&b, &token)
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
	stored := proto.CloneOf(w.stored)
	stored.Sequence = seq
	evBytes, err := proto.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("marshal event: %w", err)
	}
	if _, _, err := s.applyShared(ctx, tx, k, false, w.appDelta, w.userDelta); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO events (app_name, user_id, session_id, sequence, event_id, event_time, record)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.App, k.User, k.Session, int64(seq), stored.GetId(), stored.GetTimestamp().AsTime(), evBytes)
	if err != nil {
		return nil, fmt.Errorf("insert event: %w", err)
	}
	if err := recordToolCalls(ctx, tx, k, seq, stored); err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, "UPDATE sessions SET record = $4, last_sequence = $5 WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
		k.App, k.User, k.Session, recBytes, int64(seq))
	if err != nil {
		return nil, fmt.Errorf("update session: %w", err)
	}
	return stored, nil
}

// nextSession returns the encoded session record after an append of w
// with sequence seq: last_sequence, update_time and the usage total set,
// a compaction's end kept (never moving back), and w's session-scoped
// state changes applied.
func (s *Store) nextSession(rec *agentrunnerv1.Session, seq uint64, w eventWrite) ([]byte, error) {
	rec = proto.CloneOf(rec)
	if compaction := w.stored.GetActions().GetCompaction(); compaction != nil {
		// A compaction summarizes events before it: known, stored ones.
		if start, end := compaction.GetStartSequence(), compaction.GetEndSequence(); start == 0 || start > end || end >= seq {
			return nil, fmt.Errorf("actions.compaction: range %d..%d must be within the session's earlier events (1..%d): %w", start, end, seq-1, store.ErrInvalidArgument)
		}
		rec.CompactedSequence = max(rec.CompactedSequence, compaction.GetEndSequence())
	}
	rec.LastSequence, rec.UpdateTime = seq, w.stored.GetTimestamp()
	rec.Usage = store.AddUsage(rec.Usage, w.stored.GetUsageMetadata())
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
	if err := checkSize("session state", len(b), s.opts.MaxItemBytes); err != nil {
		return nil, err
	}
	return b, nil
}

// AppendEventOnce implements store.Store. The id is looked for among the
// session's events while its row is locked, so that two retries of one
// event never both append it.
func (s *Store) AppendEventOnce(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, bool, error) {
	if ev.GetId() == "" {
		stored, err := s.AppendEvent(ctx, k, ev)
		return stored, false, err
	}
	w, err := s.prepareEvent(k, ev)
	if err != nil {
		return nil, false, err
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
		err = tx.QueryRow(ctx, `SELECT record FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = $4
			ORDER BY sequence LIMIT 1`, k.App, k.User, k.Session, ev.GetId()).Scan(&found)
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
// the stored encoding found: the stored event when the content is the
// same, else ErrAlreadyExists.
func duplicate(found []byte, ev *agentrunnerv1.Event, w eventWrite) (*agentrunnerv1.Event, bool, error) {
	stored, err := decodeEvent(found)
	if err != nil {
		return nil, false, err
	}
	a, b := proto.CloneOf(stored), proto.CloneOf(w.stored)
	a.Sequence, b.Sequence = 0, 0
	if ev.GetTimestamp() == nil { // the store set this one's; compare the rest
		a.Timestamp, b.Timestamp = nil, nil
	}
	if !proto.Equal(a, b) {
		return nil, false, fmt.Errorf("event id %q is held by event %d of the session, with other content: %w", ev.GetId(), stored.GetSequence(), store.ErrAlreadyExists)
	}
	return stored, true, nil
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, k store.SessionKey, after uint64, page store.Page) ([]*agentrunnerv1.Event, string, error) {
	if err := validateKey(k); err != nil {
		return nil, "", err
	}
	if page.Token != "" {
		var err error
		if after, err = decodeNumber(page.Token); err != nil {
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
		return s.walkEvents(ctx, k, after, uint64(last), false, func(_ uint64, v []byte) (bool, error) {
			size += store.ItemBytes(len(v))
			if len(out) == limit || (page.MaxBytes > 0 && size > page.MaxBytes && len(out) > 0) {
				next = encodeNumber(out[len(out)-1].GetSequence())
				return false, nil
			}
			ev, err := decodeEvent(v)
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

// recordToolCalls updates the ledger of session k with the function calls
// and responses of ev, stored at its sequence.
func recordToolCalls(ctx context.Context, tx pgx.Tx, k store.SessionKey, seq uint64, ev *agentrunnerv1.Event) error {
	// Most events carry no function part: they cost no statement.
	if !slices.ContainsFunc(ev.GetContent().GetParts(), isFunctionPart) {
		return nil
	}
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc.GetId() != "" {
			if err := openCall(ctx, tx, k, seq, ev, fc); err != nil {
				return err
			}
		}
		if fr := p.GetFunctionResponse(); fr.GetId() != "" {
			if err := closeCall(ctx, tx, k, seq, ev, fr); err != nil {
				return err
			}
		}
	}
	return nil
}

func isFunctionPart(p *agentrunnerv1.Part) bool {
	return p.GetFunctionCall().GetId() != "" || p.GetFunctionResponse().GetId() != ""
}

// openCall opens a ledger entry; a call id is opened once, so a replay
// changes nothing.
func openCall(ctx context.Context, tx pgx.Tx, k store.SessionKey, seq uint64, ev *agentrunnerv1.Event, fc *agentrunnerv1.FunctionCall) error {
	if err := checkText(fc.GetId()); err != nil {
		return fmt.Errorf("function call id: %w", err)
	}
	rec := &agentrunnerv1.ToolCall{
		CallId:         fc.GetId(),
		Tool:           fc.GetName(),
		Author:         ev.GetAuthor(),
		InvocationId:   ev.GetInvocationId(),
		ArgsDigest:     digest(fc.GetArgs()),
		CallSequence:   seq,
		CallTime:       ev.GetTimestamp(),
		WaitsForCaller: slices.Contains(ev.GetLongRunningToolIds(), fc.GetId()),
	}
	b, err := proto.Marshal(rec)
	if err != nil {
		return fmt.Errorf("marshal tool call: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO tool_calls (app_name, user_id, session_id, call_id, call_sequence, record)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, k.App, k.User, k.Session, fc.GetId(), int64(seq), b)
	if err != nil {
		return fmt.Errorf("open tool call %q: %w", fc.GetId(), err)
	}
	return nil
}

// closeCall records the answer to a call: any response to a call that
// does not wait for the caller, only the caller's to one that does (an
// agent's interim response leaves it open). A response to a call the
// ledger does not know, or to one already closed, changes nothing.
func closeCall(ctx context.Context, tx pgx.Tx, k store.SessionKey, seq uint64, ev *agentrunnerv1.Event, fr *agentrunnerv1.FunctionResponse) error {
	if checkText(fr.GetId()) != nil {
		return nil // no call of that id was ever opened
	}
	var b []byte
	err := tx.QueryRow(ctx, "SELECT record FROM tool_calls WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND call_id = $4",
		k.App, k.User, k.Session, fr.GetId()).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read tool call %q: %w", fr.GetId(), err)
	}
	rec := &agentrunnerv1.ToolCall{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("decode tool call %q: %w", fr.GetId(), err)
	}
	if rec.GetResponseSequence() != 0 || (rec.GetWaitsForCaller() && ev.GetAuthor() != userAuthor) {
		return nil
	}
	rec.ResponseSequence = seq
	rec.ResponseTime = ev.GetTimestamp()
	rec.ResultDigest = digest(fr.GetResponse())
	if b, err = proto.Marshal(rec); err != nil {
		return fmt.Errorf("marshal tool call: %w", err)
	}
	_, err = tx.Exec(ctx, "UPDATE tool_calls SET record = $5 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND call_id = $4",
		k.App, k.User, k.Session, fr.GetId(), b)
	if err != nil {
		return fmt.Errorf("close tool call %q: %w", fr.GetId(), err)
	}
	return nil
}

// digest is the hex SHA-256 of m's deterministic encoding.
func digest(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
