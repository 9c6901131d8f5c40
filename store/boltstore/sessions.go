package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// eventSequenceField is the field number of Event.sequence. AppendEvent
// marshals the event outside the write transaction and appends this one
// field once the sequence is known: protobuf keeps the last occurrence of
// a scalar, so the stored bytes decode with the assigned sequence.
const eventSequenceField = 6

// validateKey is store.ValidateKey with this store's check of key parts.
func validateKey(k store.SessionKey) error {
	return store.ValidateKey(k, checkPart)
}

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
	var out *agentrunnerv1.Session
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		sk := sessionKey(k)
		sessions := tx.Bucket(bucketSessions)
		if sessions.Get(sk) != nil {
			return fmt.Errorf("session %s: %w", k, store.ErrAlreadyExists)
		}
		rec := &agentrunnerv1.Session{
			AppName: k.App, UserId: k.User, SessionId: k.Session,
			State:      &structpb.Struct{Fields: map[string]*structpb.Value{}},
			CreateTime: now, UpdateTime: now,
		}
		store.ApplyDelta(rec.State, sessDelta)
		recBytes, err := proto.Marshal(rec)
		if err != nil {
			return fmt.Errorf("marshal session: %w", err)
		}
		if err := store.CheckSize("session state", len(recBytes), s.opts.MaxItemBytes); err != nil {
			return err
		}
		appState, userState, err := applyShared(tx, k, true, appDelta, userDelta, s.opts.MaxItemBytes)
		if err != nil {
			return err
		}
		if err := put(sessions, sk, recBytes); err != nil {
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

// applyShared applies the app and user parts of a delta and returns the
// resulting shared states. Its writes come last in every caller's write
// function, after all checks, and it marshals before it writes.
func applyShared(tx *bbolt.Tx, k store.SessionKey, needShared bool, appDelta, userDelta map[string]*structpb.Value, limit int) (appState, userState *structpb.Struct, err error) {
	if len(appDelta) == 0 && len(userDelta) == 0 && !needShared {
		// The common append: nothing shared to read or write, and no
		// bucket opened (an open costs allocations).
		return nil, nil, nil
	}
	appB, userB := tx.Bucket(bucketAppState), tx.Bucket(bucketUserState)
	ak, uk := appStateKey(k.App), userStateKey(k.App, k.User)
	if appState, err = getStruct(appB, ak); err != nil {
		return nil, nil, err
	}
	if userState, err = getStruct(userB, uk); err != nil {
		return nil, nil, err
	}
	var appBytes, userBytes []byte
	if store.ApplyDelta(appState, appDelta) {
		if appBytes, err = proto.Marshal(appState); err != nil {
			return nil, nil, fmt.Errorf("marshal app state: %w", err)
		}
	}
	if store.ApplyDelta(userState, userDelta) {
		if userBytes, err = proto.Marshal(userState); err != nil {
			return nil, nil, fmt.Errorf("marshal user state: %w", err)
		}
	}
	if err := store.CheckSize("app state", len(appBytes), limit); err != nil {
		return nil, nil, err
	}
	if err := store.CheckSize("user state", len(userBytes), limit); err != nil {
		return nil, nil, err
	}
	if appBytes != nil {
		if err := put(appB, ak, appBytes); err != nil {
			return nil, nil, err
		}
	}
	if userBytes != nil {
		if err := put(userB, uk, userBytes); err != nil {
			return nil, nil, err
		}
	}
	return appState, userState, nil
}

func getStruct(b *bbolt.Bucket, key []byte) (*structpb.Struct, error) {
	st := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if v := b.Get(key); v != nil {
		if err := proto.Unmarshal(v, st); err != nil {
			return nil, fmt.Errorf("decode state: %w", err)
		}
		if st.Fields == nil {
			st.Fields = map[string]*structpb.Value{}
		}
	}
	return st, nil
}

func getSession(tx *bbolt.Tx, k store.SessionKey, sk []byte) (*agentrunnerv1.Session, error) {
	v := tx.Bucket(bucketSessions).Get(sk)
	if v == nil {
		return nil, fmt.Errorf("session %s: %w", k, store.ErrNotFound)
	}
	rec := &agentrunnerv1.Session{}
	if err := proto.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("decode session %s: %w", k, err)
	}
	return rec, nil
}

// GetSession implements store.Store.
func (s *Store) GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	if err := validateKey(k); err != nil {
		return nil, nil, err
	}
	var (
		sess   *agentrunnerv1.Session
		events []*agentrunnerv1.Event
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		sk := sessionKey(k)
		rec, err := getSession(tx, k, sk)
		if err != nil {
			return err
		}
		appState, err := getStruct(tx.Bucket(bucketAppState), appStateKey(k.App))
		if err != nil {
			return err
		}
		userState, err := getStruct(tx.Bucket(bucketUserState), userStateKey(k.App, k.User))
		if err != nil {
			return err
		}
		sess = store.MergeState(rec, appState, userState)
		if opts.AfterSequence >= rec.LastSequence {
			return nil // nothing new (see sessionEvents): no bucket opened
		}
		events, err = sessionEvents(tx.Bucket(bucketEvents).Cursor(), sk, rec.LastSequence, opts)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return sess, events, nil
}

// sessionEvents reads the events GetSession returns for opts, of session
// sk whose last sequence is last. With a count or a byte bound it walks
// back from the newest event, so that what it keeps is the newest. A time
// filter tests each event of the range (timestamps may be set by callers,
// so they need not grow with the sequence); it reads only the timestamp
// of the events it leaves out.
func sessionEvents(c *bbolt.Cursor, sk []byte, last uint64, opts store.GetOptions) ([]*agentrunnerv1.Event, error) {
	if opts.AfterSequence >= last {
		// Nothing was appended after it (a history cache's usual read):
		// no cursor, which costs a walk down the events tree.
		return nil, nil
	}
	f := opts.Filter()
	if opts.NumRecentEvents <= 0 && opts.MaxBytes <= 0 {
		return forwardEvents(c, sk, f)
	}
	n := last - min(opts.AfterSequence, last)
	if opts.NumRecentEvents > 0 {
		n = min(n, uint64(opts.NumRecentEvents))
	}
	var events []*agentrunnerv1.Event
	budget := opts.MaxBytes
	for key, v := c.Seek(eventKey(sk, last)); key != nil && uint64(len(events)) < n && bytes.HasPrefix(key, sk); key, v = c.Prev() {
		if isRunKey(key, sk) {
			continue
		}
		if seqOf(key) <= opts.AfterSequence {
			break
		}
		if keep, err := f.KeepsEncoded(v); err != nil {
			return nil, err
		} else if !keep {
			continue
		}
		if opts.MaxBytes > 0 {
			if budget -= store.ItemBytes(len(v)); budget < 0 {
				break
			}
		}
		ev, err := store.DecodeEvent(v)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	slices.Reverse(events) // oldest first
	return events, nil
}

// forwardEvents reads every event of session sk that f selects, oldest
// first.
func forwardEvents(c *bbolt.Cursor, sk []byte, f store.EventFilter) ([]*agentrunnerv1.Event, error) {
	var events []*agentrunnerv1.Event
	for key, v := c.Seek(eventKey(sk, f.AfterSequence+1)); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
		if isRunKey(key, sk) {
			continue
		}
		if keep, err := f.KeepsEncoded(v); err != nil {
			return nil, err
		} else if !keep {
			continue
		}
		ev, err := store.DecodeEvent(v)
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func seqOf(eventKey []byte) uint64 { return binary.BigEndian.Uint64(eventKey[len(eventKey)-8:]) }

// ListSessions implements store.Store.
func (s *Store) ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error) {
	if err := store.CheckSessionList(app, user, checkPart); err != nil {
		return nil, "", err
	}
	prefix := appendString(nil, app)
	if user != "" {
		prefix = appendString(prefix, user)
	}
	start := prefix
	if page.Token != "" {
		tok, err := decodeToken(page.Token)
		if err != nil {
			return nil, "", err
		}
		if !bytes.HasPrefix(tok, prefix) {
			return nil, "", fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
		}
		start = append(tok, 0) // the smallest key after the token
	}
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.Session
		next string
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		appState, err := getStruct(tx.Bucket(bucketAppState), appStateKey(app))
		if err != nil {
			return err
		}
		userStates := map[string]*structpb.Struct{}
		c := tx.Bucket(bucketSessions).Cursor()
		size := 0
		for key, v := c.Seek(start); key != nil && bytes.HasPrefix(key, prefix); key, v = c.Next() {
			if len(out) == limit {
				next = encodeToken(sessionKey(store.SessionKey{App: app, User: out[len(out)-1].UserId, Session: out[len(out)-1].SessionId}))
				return nil
			}
			rec := &agentrunnerv1.Session{}
			if err := proto.Unmarshal(v, rec); err != nil {
				return fmt.Errorf("decode session: %w", err)
			}
			us, ok := userStates[rec.UserId]
			if !ok {
				if us, err = getStruct(tx.Bucket(bucketUserState), userStateKey(app, rec.UserId)); err != nil {
					return err
				}
				userStates[rec.UserId] = us
			}
			merged := store.MergeState(rec, appState, us)
			// The merged state counts: app and user state come with
			// every session of the page.
			if size += store.ItemBytes(proto.Size(merged)); page.MaxBytes > 0 && size > page.MaxBytes && len(out) > 0 {
				next = encodeToken(sessionKey(store.SessionKey{App: app, User: out[len(out)-1].UserId, Session: out[len(out)-1].SessionId}))
				return nil
			}
			out = append(out, merged)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// DeleteSession implements store.Store. It deletes the session's run
// records and their index entries too. A record of the session that
// PutRunLater queued before is written first and deleted with the rest;
// one queued later finds no session and is dropped.
func (s *Store) DeleteSession(ctx context.Context, k store.SessionKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	// Queued records ride along with every commit, this one too, so that
	// none outlives it (to surface in a session recreated later).
	sk := sessionKey(k)
	return s.write(ctx, func(tx *bbolt.Tx) error {
		if _, err := getSession(tx, k, sk); err != nil {
			return err
		}
		// Collect the keys first and delete afterwards: deleting while a
		// cursor walks can skip keys (etcd-io/bbolt#146).
		events := tx.Bucket(bucketEvents)
		artifacts, blobs := tx.Bucket(bucketArtifacts), tx.Bucket(bucketBlobs)
		evKeys := collectPrefix(events, sk)
		runs, err := collectRuns(tx, sk, evKeys)
		if err != nil {
			return err
		}
		calls := tx.Bucket(bucketToolCalls)
		for _, key := range collectPrefix(calls, sk) {
			if err := del(calls, key); err != nil {
				return err
			}
		}
		artKeys := collectPrefix(artifacts, artifactPrefix(k.App, k.User, k.Session))
		if err := s.unindexSession(tx, k, sk); err != nil {
			return err
		}
		if err := del(tx.Bucket(bucketSessions), sk); err != nil {
			return err
		}
		if err := runs.delete(tx); err != nil {
			return err
		}
		for _, key := range evKeys {
			if err := del(events, key); err != nil {
				return err
			}
		}
		for _, key := range artKeys {
			if err := del(artifacts, key); err != nil {
				return err
			}
			if err := del(blobs, key); err != nil {
				return err
			}
		}
		return nil
	})
}

func collectPrefix(b *bbolt.Bucket, prefix []byte) [][]byte {
	var keys [][]byte
	c := b.Cursor()
	for key, _ := c.Seek(prefix); key != nil && bytes.HasPrefix(key, prefix); key, _ = c.Next() {
		keys = append(keys, bytes.Clone(key))
	}
	return keys
}

// AppendEvent implements store.Store: the runner's append, whose usage
// counts.
func (s *Store) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	return s.appendEvent(ctx, k, ev, true)
}

// appendEvent appends ev; counted is whether its usage and cost count
// toward the session's totals and the ledger (the runner's appends), or
// are only stored (a client's, AppendEventOnce).
func (s *Store) appendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, counted bool) (*agentrunnerv1.Event, error) {
	w, err := s.prepareEvent(k, ev, counted)
	if err != nil {
		return nil, err
	}
	sk := sessionKey(k)
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		sv := tx.Bucket(bucketSessions).Get(sk)
		if sv == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		// A retry of the transaction overwrites the sequence; w.bytes
		// was encoded without it.
		var err error
		w.stored.Sequence, err = appendEventTx(tx, k, sk, sv, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return w.stored, nil
}

// eventWrite is an event ready to be appended: checked, completed and
// encoded outside the write transaction. It is passed by value: a write
// function captures it without a heap allocation of its own.
type eventWrite struct {
	stored                         *agentrunnerv1.Event // the copy returned, without its sequence
	bytes                          []byte               // stored's encoding
	sessDelta, appDelta, userDelta map[string]*structpb.Value
	limit                          int       // the store's MaxItemBytes
	mem                            *memState // the store's, told of appends to sessions in memory
	spend                          [2][]byte // the ledger keys the event adds to (spendKeys); none without usage
	// counted: the event's usage counts toward the session's totals and
	// the ledger (see appendEvent).
	counted bool
}

// prepareEvent checks an event to append and makes its stored copy: id
// and timestamp set, "temp:" keys removed, encoded.
func (s *Store) prepareEvent(k store.SessionKey, ev *agentrunnerv1.Event, counted bool) (eventWrite, error) {
	stored, err := store.StoredEvent(k, ev, checkPart, s.opts.NewID, s.opts.Now)
	if err != nil {
		return eventWrite{}, err
	}
	w := eventWrite{stored: stored}
	w.sessDelta, w.appDelta, w.userDelta = store.SplitDelta(w.stored.GetActions().GetStateDelta())
	// Marshal outside the transaction: the committer is a single
	// goroutine, so work done here runs in parallel across sessions.
	if w.bytes, err = proto.Marshal(w.stored); err != nil {
		return eventWrite{}, fmt.Errorf("marshal event: %w", err)
	}
	// The sequence, appended in the committer, adds at most 11 bytes.
	if err := store.CheckSize("event", len(w.bytes)+11, s.opts.MaxItemBytes); err != nil {
		return eventWrite{}, err
	}
	w.limit = s.opts.MaxItemBytes
	w.mem = &s.mem
	w.counted = counted && w.stored.GetUsageMetadata() != nil
	if w.counted {
		// The day is the store's clock at the write, not the event's
		// timestamp, which its author chose.
		w.spend = spendKeys(k, w.stored, s.opts.Now())
	}
	return w, nil
}

// appendEventTx appends w to session k (key sk, whose stored record is
// sv, read in tx) and returns its sequence. Everything that can fail for a
// reason other than a bbolt write fails before it writes.
func appendEventTx(tx *bbolt.Tx, k store.SessionKey, sk, sv []byte, w eventWrite) (uint64, error) {
	seq := lastSequenceOf(sv) + 1
	recBytes, err := nextSession(sv, seq, w)
	if err != nil {
		return 0, fmt.Errorf("session %s: %w", k, err)
	}
	// Full slice expression: appending must not write into w.bytes, which
	// a retry of the transaction reuses.
	b := protowire.AppendTag(w.bytes[:len(w.bytes):len(w.bytes)], eventSequenceField, protowire.VarintType)
	b = protowire.AppendVarint(b, seq)
	spend, err := planSpend(tx, &w)
	if err != nil {
		return 0, err
	}
	if _, _, err := applyShared(tx, k, false, w.appDelta, w.userDelta, w.limit); err != nil {
		return 0, err
	}
	if err := putEvent(tx.Bucket(bucketEvents), eventKey(sk, seq), b); err != nil {
		return 0, err
	}
	if err := recordToolCalls(tx, sk, seq, w.stored); err != nil {
		// The event is written already: a failure here must not let the
		// rest of the batch commit with half of this append.
		return 0, abortError{err}
	}
	indexAppended(tx, k, sk, w.mem)
	if err := putSpend(tx, &w, spend); err != nil {
		return 0, err
	}
	if err := put(tx.Bucket(bucketSessions), sk, recBytes); err != nil {
		return 0, err
	}
	return seq, nil
}

// nextSession returns the session record sv after an append of w with
// sequence seq: last_sequence and update_time set, and w's session-scoped
// state changes applied. Most events change no session state; their
// append rewrites the two fields in the encoding (protobuf allows fields
// in any order) instead of decoding and encoding the whole record, state
// included, in the committer, the one goroutine every write waits on.
func nextSession(sv []byte, seq uint64, w eventWrite) ([]byte, error) {
	ts := w.stored.GetTimestamp()
	compaction := w.stored.GetActions().GetCompaction()
	if len(w.sessDelta) == 0 && compaction == nil {
		return patchSession(sv, seq, ts, w.stored, w.counted)
	}
	rec := &agentrunnerv1.Session{}
	if err := proto.Unmarshal(sv, rec); err != nil {
		return nil, fmt.Errorf("decode session: %w", err)
	}
	if compaction != nil {
		// A compaction summarizes events before it: known, stored ones.
		if start, end := compaction.GetStartSequence(), compaction.GetEndSequence(); start == 0 || start > end || end >= seq {
			return nil, fmt.Errorf("actions.compaction: range %d..%d must be within the session's earlier events (1..%d): %w", start, end, seq-1, store.ErrInvalidArgument)
		}
		rec.CompactedSequence = max(rec.CompactedSequence, compaction.GetEndSequence())
	}
	rec.LastSequence, rec.UpdateTime = seq, ts
	if w.counted {
		rec.Usage = store.AddUsage(rec.Usage, w.stored.GetUsageMetadata())
		rec.Cost = store.AddEventCost(rec.Cost, w.stored)
		rec.TotalTokens += store.EventTokens(w.stored)
	}
	if rec.State == nil {
		rec.State = &structpb.Struct{}
	}
	store.ApplyDelta(rec.State, w.sessDelta)
	b, err := proto.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("marshal session: %w", err)
	}
	if err := store.CheckSize("session state", len(b), w.limit); err != nil {
		return nil, err
	}
	return b, nil
}

// patchSession copies the encoded session sv without its last_sequence
// and update_time fields, and appends them with the values given; for an
// event ev whose usage counts, the session's usage, cost and token totals
// too (decoded alone: a few varints).
func patchSession(sv []byte, seq uint64, ts *timestamppb.Timestamp, ev *agentrunnerv1.Event, counted bool) ([]byte, error) {
	counted = counted && ev.GetUsageMetadata() != nil
	out := make([]byte, 0, len(sv)+64)
	var totals sessionTotals
	for v := sv; len(v) > 0; {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return nil, errors.New("corrupt session record")
		}
		m := protowire.ConsumeFieldValue(num, typ, v[n:])
		if m < 0 {
			return nil, errors.New("corrupt session record")
		}
		// A field of the wrong wire type is an unknown field to protobuf,
		// kept as it is: so here (found by FuzzPatchSession).
		switch {
		case num == sessionLastSequenceField && typ == protowire.VarintType, num == sessionUpdateTimeField && typ == protowire.BytesType:
		case counted && totals.take(num, typ, v[n:n+m]):
		default:
			out = append(out, v[:n+m]...)
		}
		v = v[n+m:]
	}
	if counted {
		var err error
		if out, err = totals.appendTo(out, ev); err != nil {
			return nil, err
		}
	}
	var t []byte // a Timestamp: seconds = 1, nanos = 2, zero values left out
	if sec := ts.GetSeconds(); sec != 0 {
		t = protowire.AppendVarint(protowire.AppendTag(t, 1, protowire.VarintType), uint64(sec))
	}
	if ns := ts.GetNanos(); ns != 0 {
		t = protowire.AppendVarint(protowire.AppendTag(t, 2, protowire.VarintType), uint64(int64(ns)))
	}
	out = protowire.AppendBytes(protowire.AppendTag(out, sessionUpdateTimeField, protowire.BytesType), t)
	return protowire.AppendVarint(protowire.AppendTag(out, sessionLastSequenceField, protowire.VarintType), seq), nil
}

// sessionTotals are a session record's usage, cost and total_tokens
// as patchSession finds them: the usage and cost occurrences' payloads
// (protobuf merges them, as decoding their concatenation does) and the
// last total.
type sessionTotals struct {
	usage, cost []byte
	tokens      int64
}

// take keeps the field if it is one of the totals, and reports whether
// it was.
func (t *sessionTotals) take(num protowire.Number, typ protowire.Type, val []byte) bool {
	switch {
	case num == sessionUsageField && typ == protowire.BytesType:
		b, _ := protowire.ConsumeBytes(val)
		t.usage = append(t.usage, b...)
	case num == sessionCostField && typ == protowire.BytesType:
		b, _ := protowire.ConsumeBytes(val)
		t.cost = append(t.cost, b...)
	case num == sessionTotalTokensField && typ == protowire.VarintType:
		t.tokens = int64(varintOf(val))
	default:
		return false
	}
	return true
}

// appendTo appends to the session record out its usage, cost and token
// totals after ev, which has usage: patched in their encoding.
func (t *sessionTotals) appendTo(out []byte, ev *agentrunnerv1.Event) ([]byte, error) {
	out, err := appendMessage(out, sessionUsageField, func(b []byte) ([]byte, error) { return patchUsage(b, t.usage, ev.GetUsageMetadata()) })
	if err != nil {
		return nil, fmt.Errorf("session usage: %w", err)
	}
	if out, err = appendMessage(out, sessionCostField, func(b []byte) ([]byte, error) { return patchCost(b, t.cost, eventCost(ev)) }); err != nil {
		return nil, fmt.Errorf("session cost: %w", err)
	}
	total := uint64(t.tokens + store.EventTokens(ev))
	return protowire.AppendVarint(protowire.AppendTag(out, sessionTotalTokensField, protowire.VarintType), total), nil
}

// ListEvents implements store.Store.
func (s *Store) ListEvents(ctx context.Context, k store.SessionKey, f store.EventFilter, page store.Page) ([]*agentrunnerv1.Event, string, error) {
	if err := validateKey(k); err != nil {
		return nil, "", err
	}
	after := f.AfterSequence
	if page.Token != "" {
		tok, err := decodeToken(page.Token)
		if err != nil {
			return nil, "", err
		}
		if len(tok) != 8 {
			return nil, "", fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
		}
		after = binary.BigEndian.Uint64(tok)
	}
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.Event
		next string
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		sk := sessionKey(k)
		if _, err := getSession(tx, k, sk); err != nil {
			return err
		}
		c := tx.Bucket(bucketEvents).Cursor()
		size := 0
		for key, v := c.Seek(eventKey(sk, after+1)); key != nil && bytes.HasPrefix(key, sk); key, v = c.Next() {
			if isRunKey(key, sk) {
				continue
			}
			if keep, err := f.KeepsEncoded(v); err != nil {
				return err
			} else if !keep {
				continue
			}
			size += store.ItemBytes(len(v))
			if len(out) == limit || (page.MaxBytes > 0 && size > page.MaxBytes && len(out) > 0) {
				next = encodeToken(appendUint64(nil, out[len(out)-1].Sequence))
				return nil
			}
			ev, err := store.DecodeEvent(v)
			if err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}
