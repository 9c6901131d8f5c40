package boltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Run records live in bucket run_records, by run id, with the key of
// the run's entry in its session's list of runs:
//
//	run_records     'r' T(run_id)                       -> U(len(run key)) run key, Run
//	run_records     'i', 'v' T(app, user) N(create) T(run_id) -> empty: the run index (runindex.go)
//	events          run key                             -> empty: the session's list of runs
//	run_requests    T(app, user, session, request_id)   -> run key
//
// A run key (see runKey) sits among its session's events, after the
// event that was the session's last when the record was first written:
// listing a session's runs walks its events back, and adding a run
// dirties the page its first event dirties anyway. The record itself is
// keyed by run id, which starts with its creation time: the records a
// commit writes, first or final, are those of recent runs, which share
// the last pages of run_records. Kept among the events, a final record
// written after its run's last event dirtied a page of its session's
// events of its own, a page a run in most commits (BenchmarkRunLifecycle).
//
// A record keeps the key of its first write, and the stored create_time.
// Every write of a record keeps the indexes in its own transaction.

// Field numbers of Run that the store reads or appends without decoding or
// encoding the whole record (protobuf keeps the last occurrence of a
// scalar; see eventSequenceField).
const (
	runFirstSequenceField = 9
	runLastSequenceField  = 10
	runRequestIDField     = 12
	runStatusField        = 5
	// sessionLastSequenceField is Session.last_sequence, the anchor of a
	// record written on its own; it and sessionUpdateTimeField are the
	// fields an append rewrites (patchSession).
	sessionLastSequenceField = 7
	sessionUpdateTimeField   = 6
	sessionUsageField        = 8
)

// unfinished reports whether a run of this status is listed by
// ListUnfinishedRuns.
func unfinished(st agentrunnerv1.RunStatus) bool {
	return st == agentrunnerv1.RunStatus_RUN_STATUS_PENDING || st == agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
}

// runWrite is a run record ready to be written: checked and encoded
// outside the write transaction. Nothing changes it afterwards; it may be
// shared by the queue and the reads that overlay it.
type runWrite struct {
	rec   *agentrunnerv1.Run // a copy of its own, or PutRunLater's, which its caller never changes
	sk    []byte             // its session's key
	nanos int64              // its create_time in Unix nanoseconds
	bytes []byte             // rec's encoding
}

// newKey is the key of w's record when it is first written while its
// session's last sequence is anchor.
func (w *runWrite) newKey(anchor uint64) []byte {
	return runKey(w.sk, anchor, w.nanos, w.rec.GetRunId())
}

func prepareRun(run *agentrunnerv1.Run) (*runWrite, error) {
	return prepareRunOf(run.CloneVT())
}

// prepareRunOf is prepareRun for a record the write may keep as it is:
// its caller never changes it again.
func prepareRunOf(run *agentrunnerv1.Run) (*runWrite, error) {
	nanos, err := store.CheckRun(run, checkPart)
	if err != nil {
		return nil, err
	}
	w := &runWrite{rec: run, sk: sessionKey(store.RunKey(run)), nanos: nanos}
	if w.bytes, err = proto.Marshal(w.rec); err != nil {
		return nil, fmt.Errorf("marshal run %s: %w", run.GetRunId(), err)
	}
	return w, nil
}

// runPlan is what writing a record changes, worked out in the write
// transaction before anything is written.
type runPlan struct {
	w          *runWrite
	key        []byte                 // where the record goes: the stored record's key when there is one
	bytes      []byte                 // the encoding to store, before sequences are set
	createTime *timestamppb.Timestamp // the stored create_time when w's differs, else nil
	newRun     bool                   // no record yet: the session's list gets its key
	listed     bool                   // that key is put (see list)
	putReq     []byte                 // run_requests entry to add
	delReq     []byte                 // run_requests entry of the record's old request_id, to delete
	callback   bool                   // the write queues a webhook delivery (store.QueuesDelivery)
	active     int                    // the same for the run's active entry in the run index (runindex.go)
}

// planRun checks a write of w (whose session exists, with last sequence
// anchor) and plans it. The run id must not be another session's, and the
// request_id not another run's (ErrAlreadyExists).
func planRun(tx *bbolt.Tx, w *runWrite, anchor uint64) (*runPlan, error) {
	p := &runPlan{w: w, bytes: w.bytes}
	var (
		oldReq    string
		wasActive bool // the run has an active entry in the run index: its stored status is active
	)
	stored, v, err := storedRun(tx, w.rec.GetRunId())
	switch {
	case err != nil:
		return nil, err
	case stored == nil:
		p.newRun = true
		p.key = w.newKey(anchor)
		p.callback = store.QueuesDelivery(w.rec, false, 0)
	default:
		if !bytes.HasPrefix(stored, w.sk) {
			return nil, fmt.Errorf("run_id %s is a run of another session: %w", w.rec.GetRunId(), store.ErrAlreadyExists)
		}
		p.key = bytes.Clone(stored)
		var st agentrunnerv1.RunStatus
		oldReq, st = requestAndStatusOf(v)
		wasActive = store.Active(st)
		p.callback = store.QueuesDelivery(w.rec, true, st)
		if runNanos(p.key, w.sk) != w.nanos {
			if err := p.keepCreateTime(); err != nil {
				return nil, err
			}
		}
	}
	if w.rec.GetRequestId() != "" || oldReq != "" {
		// Opening a bucket costs a few allocations: only when needed.
		if err := p.planRequest(tx.Bucket(bucketRunReqs), oldReq); err != nil {
			return nil, err
		}
	}
	switch want := store.Active(w.rec.GetStatus()); {
	case want && !wasActive:
		p.active = 1
	case !want && wasActive:
		p.active = -1
	}
	return p, nil
}

// keepCreateTime re-encodes the record with the create_time of its key:
// a record's create_time never changes once written.
func (p *runPlan) keepCreateTime() error {
	p.createTime = timestamppb.New(time.Unix(0, runNanos(p.key, p.w.sk)))
	rec := p.w.rec.CloneVT()
	rec.CreateTime = p.createTime
	var err error
	if p.bytes, err = proto.Marshal(rec); err != nil {
		return fmt.Errorf("marshal run %s: %w", rec.GetRunId(), err)
	}
	return nil
}

// planRequest claims the record's request_id in the session and releases
// the one it held before, oldReq.
func (p *runPlan) planRequest(reqs *bbolt.Bucket, oldReq string) error {
	if req := p.w.rec.GetRequestId(); req != "" {
		rk := runRequestKey(p.w.sk, req)
		switch holder := reqs.Get(rk); {
		case holder == nil:
			p.putReq = rk
		case !bytes.Equal(holder, p.key):
			other, err := runIDOfKey(holder, p.w.sk)
			if err != nil {
				return fmt.Errorf("run_requests entry of %q: %w", req, err)
			}
			return fmt.Errorf("request_id %q is held by run %s: %w", req, other, store.ErrAlreadyExists)
		}
	}
	if oldReq != "" && oldReq != p.w.rec.GetRequestId() {
		if rk := runRequestKey(p.w.sk, oldReq); bytes.Equal(reqs.Get(rk), p.key) {
			p.delReq = rk
		}
	}
	return nil
}

// apply writes the planned record and its index entries; a seq other than
// zero is stored as last_sequence (and as first_sequence when that is
// zero). It fails only with an abortError.
func (p *runPlan) apply(tx *bbolt.Tx, seq uint64) error {
	v := p.bytes
	if seq != 0 {
		v = appendSequences(v, p.w.rec.GetFirstSequence() == 0, seq)
	}
	if err := p.list(tx); err != nil {
		return err
	}
	records, id := tx.Bucket(bucketRunRecords), p.w.rec.GetRunId()
	if err := put(records, recordKey(id), recordEntry(p.key, v)); err != nil {
		return err
	}
	if p.putReq != nil {
		if err := put(tx.Bucket(bucketRunReqs), p.putReq, p.key); err != nil {
			return err
		}
	}
	if p.delReq != nil {
		if err := del(tx.Bucket(bucketRunReqs), p.delReq); err != nil {
			return err
		}
	}
	if err := p.index(records); err != nil {
		return err
	}
	return p.queueDelivery(tx, seq)
}

// list puts a new run's key in its session's list of runs, once. The key
// sorts right after the session's last event, so AppendRunEvent lists the
// run before it appends the event: the two then go to the end of the
// session's range in order, and a lone session's commit only appends
// (see appendFill). It fails only with an abortError.
func (p *runPlan) list(tx *bbolt.Tx) error {
	if !p.newRun || p.listed {
		return nil
	}
	p.listed = true
	return putEvent(tx.Bucket(bucketEvents), p.key, []byte{})
}

// appendSequences appends last_sequence, and first_sequence when first,
// to an encoded Run. It never writes into b's array, which a retry of the
// transaction reuses.
func appendSequences(b []byte, first bool, seq uint64) []byte {
	b = b[:len(b):len(b)]
	if first {
		b = protowire.AppendTag(b, runFirstSequenceField, protowire.VarintType)
		b = protowire.AppendVarint(b, seq)
	}
	b = protowire.AppendTag(b, runLastSequenceField, protowire.VarintType)
	return protowire.AppendVarint(b, seq)
}

// lastSequenceOf reads the last_sequence of an encoded Session without
// decoding the rest of it.
func lastSequenceOf(v []byte) uint64 { return lastVarint(v, sessionLastSequenceField) }

// recordStatus is requestAndStatusOf's status alone, without the
// request id's copy.
func recordStatus(v []byte) agentrunnerv1.RunStatus {
	return agentrunnerv1.RunStatus(int32(lastVarint(v, runStatusField)))
}

// lastVarint reads the varint field field of an encoded message without
// decoding the rest of it (the last occurrence wins, as in protobuf); 0
// when there is none.
func lastVarint(v []byte, field protowire.Number) uint64 {
	var x uint64
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return x
		}
		v = v[n:]
		if num == field && typ == protowire.VarintType {
			y, m := protowire.ConsumeVarint(v)
			if m < 0 {
				return x
			}
			x, v = y, v[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, v)
		if m < 0 {
			return x
		}
		v = v[m:]
	}
	return x
}

// requestAndStatusOf reads the request_id and the status of an encoded
// Run without decoding the rest of it (the last occurrence of each wins,
// as in protobuf). A run has an active entry in the run index exactly
// when its stored status is active, so the status read here spares a
// lookup there.
func requestAndStatusOf(v []byte) (string, agentrunnerv1.RunStatus) {
	var (
		id string
		st agentrunnerv1.RunStatus
	)
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return id, st
		}
		v = v[n:]
		switch {
		case num == runRequestIDField && typ == protowire.BytesType:
			b, m := protowire.ConsumeBytes(v)
			if m < 0 {
				return id, st
			}
			id, v = string(b), v[m:]
			continue
		case num == runStatusField && typ == protowire.VarintType:
			x, m := protowire.ConsumeVarint(v)
			if m < 0 {
				return id, st
			}
			st, v = agentrunnerv1.RunStatus(int32(x)), v[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, v)
		if m < 0 {
			return id, st
		}
		v = v[m:]
	}
	return id, st
}

// recordEntry is a run_records value: the run key, then the record.
func recordEntry(key, rec []byte) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(key)+len(rec))
	b = binary.AppendUvarint(b, uint64(len(key)))
	return append(append(b, key...), rec...)
}

// storedRun returns the run key and the encoded record of a stored run;
// nil when there is none.
func storedRun(tx *bbolt.Tx, runID string) (key, rec []byte, err error) {
	v := tx.Bucket(bucketRunRecords).Get(recordKey(runID))
	if v == nil {
		return nil, nil, nil
	}
	return parseRecordEntry(runID, v)
}

// parseRecordEntry splits a run_records 'r' value (recordEntry) into the
// run key and the encoded record.
func parseRecordEntry(runID string, v []byte) (key, rec []byte, err error) {
	key, rec, ok := splitRecordEntry(v)
	if !ok {
		return nil, nil, fmt.Errorf("run %s: corrupt run_records entry", runID)
	}
	return key, rec, nil
}

// splitRecordEntry is parseRecordEntry without an error to build.
func splitRecordEntry(v []byte) (key, rec []byte, ok bool) {
	n, m := binary.Uvarint(v)
	if m <= 0 || n == 0 || uint64(len(v)-m) < n {
		return nil, nil, false
	}
	return v[m : m+int(n)], v[m+int(n):], true
}

// exists reports whether b holds key (whatever its value, even empty).
func exists(b *bbolt.Bucket, key []byte) bool {
	k, _ := b.Cursor().Seek(key)
	return bytes.Equal(k, key)
}

func decodeRun(v []byte) (*agentrunnerv1.Run, error) {
	rec := &agentrunnerv1.Run{}
	if err := proto.Unmarshal(v, rec); err != nil {
		return nil, fmt.Errorf("decode run: %w", err)
	}
	return rec, nil
}

// getRun decodes the stored record of a run an index names.
func getRun(tx *bbolt.Tx, runID string) (*agentrunnerv1.Run, error) {
	_, rec, err := loadRun(tx, runID)
	return rec, err
}

// loadRun returns the run key and the decoded record of a run an index
// names; a run without a record is an error.
func loadRun(tx *bbolt.Tx, runID string) ([]byte, *agentrunnerv1.Run, error) {
	key, v, err := storedRun(tx, runID)
	if err != nil {
		return nil, nil, err
	}
	if key == nil {
		return nil, nil, fmt.Errorf("an index names run %s, which has no record", runID)
	}
	rec, err := decodeRun(v)
	return key, rec, err
}

// putRunTx writes a record on its own; its session must exist.
func putRunTx(tx *bbolt.Tx, w *runWrite) error {
	sess := tx.Bucket(bucketSessions).Get(w.sk)
	if sess == nil {
		return fmt.Errorf("session %s: %w", store.RunKey(w.rec), store.ErrNotFound)
	}
	p, err := planRun(tx, w, lastSequenceOf(sess))
	if err != nil {
		return err
	}
	return p.apply(tx, 0)
}

// AppendRunEvent implements store.RunStore.
func (s *Store) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ew, err := s.prepareEvent(k, ev, true)
	if err != nil {
		return nil, nil, err
	}
	rw, err := prepareRun(run)
	if err != nil {
		return nil, nil, err
	}
	if err := store.CheckRunOf(run, k); err != nil {
		return nil, nil, err
	}
	var (
		seq        uint64
		createTime *timestamppb.Timestamp
	)
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		sv := tx.Bucket(bucketSessions).Get(rw.sk)
		if sv == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		p, err := planRun(tx, rw, lastSequenceOf(sv))
		if err != nil {
			return err
		}
		if err := p.list(tx); err != nil {
			return err
		}
		if seq, err = appendEventTx(tx, k, rw.sk, sv, ew); err != nil {
			var ae abortError
			if p.listed && !errors.As(err, &ae) {
				err = abortError{err} // the run is listed: none of this write may commit
			}
			return err
		}
		createTime = p.createTime
		return p.apply(tx, seq)
	})
	if err != nil {
		return nil, nil, err
	}
	ew.stored.Sequence = seq
	out := rw.rec // the write is done: nothing shares rw any more
	out.LastSequence = seq
	if out.FirstSequence == 0 {
		out.FirstSequence = seq
	}
	if createTime != nil {
		out.CreateTime = createTime
	}
	return ew.stored, out, nil
}

// PutRun implements store.RunStore.
func (s *Store) PutRun(ctx context.Context, run *agentrunnerv1.Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w, err := prepareRun(run)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *bbolt.Tx) error { return putRunTx(tx, w) })
}

// PutRunLater implements store.RunStore. A record that can never be
// written (see PutRun), or one queued after Close, is logged and dropped.
func (s *Store) PutRunLater(run *agentrunnerv1.Run) {
	w, err := prepareRunOf(run) // the caller leaves run as it is (see store.RunStore)
	if err != nil {
		s.opts.Logger.Error("run record not queued", "run", run.GetRunId(), "err", err)
		return
	}
	if !s.later.add(w) {
		s.opts.Logger.Error("run record not queued", "run", run.GetRunId(), "err", store.ErrClosed)
	}
}

// writeQueued writes the records PutRunLater queued, in the committer's
// transaction. A record that cannot be written is logged and skipped (one
// of a deleted session is dropped quietly); only a failed bbolt write,
// returned, aborts the transaction.
func (s *Store) writeQueued(tx *bbolt.Tx, queued []*runWrite) error {
	for _, w := range queued {
		err := putRunTx(tx, w)
		var ae abortError
		switch {
		case err == nil:
		case errors.As(err, &ae):
			return ae.err
		case errors.Is(err, store.ErrNotFound):
			s.opts.Logger.Debug("queued run record dropped: its session is gone", "run", w.rec.GetRunId(), "err", err)
		default:
			s.opts.Logger.Error("queued run record not written", "run", w.rec.GetRunId(), "err", err)
		}
	}
	return nil
}

// GetRun implements store.RunStore.
func (s *Store) GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if runID == "" {
		return nil, fmt.Errorf("run_id is empty: %w", store.ErrInvalidArgument)
	}
	if err := checkParts(runID); err != nil {
		return nil, err
	}
	queued := s.later.get(runID)
	var out *agentrunnerv1.Run
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if queued != nil {
			if _, rec, ok := resolveQueued(tx, queued); ok {
				out = rec.CloneVT()
				return nil
			}
		}
		key, v, err := storedRun(tx, runID)
		switch {
		case err != nil:
			return err
		case key == nil:
			return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
		}
		out, err = decodeRun(v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindRunByRequest implements store.RunStore.
func (s *Store) FindRunByRequest(ctx context.Context, k store.SessionKey, requestID string) (*agentrunnerv1.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckRequestKey(k, requestID, checkPart); err != nil {
		return nil, err
	}
	sk := sessionKey(k)
	queued := s.later.ofSession(sk)
	var out *agentrunnerv1.Run
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketSessions).Get(sk) == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		var err error
		if out, err = findByRequest(tx, sk, requestID, queued); err == nil && out == nil {
			err = fmt.Errorf("request_id %q in session %s: %w", requestID, k, store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// findByRequest returns the run of session sk that holds requestID, with
// the session's queued records overlaid; nil when there is none.
func findByRequest(tx *bbolt.Tx, sk []byte, requestID string, queued map[string]*runWrite) (*agentrunnerv1.Run, error) {
	if holder := tx.Bucket(bucketRunReqs).Get(runRequestKey(sk, requestID)); holder != nil {
		id, err := runIDOfKey(holder, sk)
		if err != nil {
			return nil, fmt.Errorf("run_requests entry of %q: %w", requestID, err)
		}
		w := queued[id]
		if w == nil {
			return getRun(tx, id)
		}
		if w.rec.GetRequestId() == requestID {
			return placeQueued(w, holder), nil
		}
		// The queued record gives the request_id up.
	}
	for _, w := range queued {
		if w.rec.GetRequestId() != requestID {
			continue
		}
		if _, rec, ok := resolveQueued(tx, w); ok {
			return rec.CloneVT(), nil
		}
	}
	return nil, nil
}

// resolveQueued returns a queued record as it is to be stored: under the
// key of the run's stored record, with its create_time. ok is false when
// it is not to be stored: its session is gone, or its run id is another
// session's. The record returned may be the queue's own.
func resolveQueued(tx *bbolt.Tx, w *runWrite) (key []byte, rec *agentrunnerv1.Run, ok bool) {
	sess := tx.Bucket(bucketSessions).Get(w.sk)
	if sess == nil {
		return nil, nil, false
	}
	stored, _, err := storedRun(tx, w.rec.GetRunId())
	switch {
	case err != nil:
		return nil, nil, false // the stored record's own read reports it
	case stored == nil:
		return w.newKey(lastSequenceOf(sess)), w.rec, true
	case !bytes.HasPrefix(stored, w.sk):
		return nil, nil, false
	case runNanos(stored, w.sk) == w.nanos:
		return stored, w.rec, true
	}
	return stored, placeQueued(w, stored), true
}

// placeQueued returns a copy of a queued record for the stored record at
// key (of the same run): with the create_time of key.
func placeQueued(w *runWrite, key []byte) *agentrunnerv1.Run {
	rec := w.rec.CloneVT()
	if runNanos(key, w.sk) != w.nanos {
		rec.CreateTime = timestamppb.New(time.Unix(0, runNanos(key, w.sk)))
	}
	return rec
}

// ListRuns implements store.RunStore. The page token is the key of the
// last run listed.
func (s *Store) ListRuns(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if err := validateKey(k); err != nil {
		return nil, "", err
	}
	return s.listSessionRuns(ctx, k, store.RunFilter{}, page)
}

// listSessionRuns is ListRuns of the runs of session k that f keeps.
func (s *Store) listSessionRuns(ctx context.Context, k store.SessionKey, f store.RunFilter, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	sk := sessionKey(k)
	bound, err := runsPageBound(sk, page.Token)
	if err != nil {
		return nil, "", err
	}
	queued := s.later.ofSession(sk)
	var (
		out  []*agentrunnerv1.Run
		next string
	)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		sess := tx.Bucket(bucketSessions).Get(sk)
		if sess == nil {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		}
		fresh := freshRuns(tx, queued, lastSequenceOf(sess), bound)
		var err error
		out, next, err = listRunsTx(tx, sk, bound, fresh, queued, f, page.Limit())
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// runsPageBound returns the key a page of session sk's runs starts
// before: past every run of the session for the first page.
func runsPageBound(sk []byte, token string) ([]byte, error) {
	if token == "" {
		return successor(sk), nil
	}
	tok, err := decodeToken(token)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(tok, sk) || len(tok) < len(sk)+16+2 {
		return nil, fmt.Errorf("page_token belongs to another listing: %w", store.ErrInvalidArgument)
	}
	return tok, nil
}

// placedRun is a record with the key it is (or is to be) stored under.
type placedRun struct {
	key []byte
	rec *agentrunnerv1.Run
}

// listRunsTx walks session sk's runs back from bound, merging in fresh
// (the queued records of runs not stored yet) and replacing stored
// records by their queued ones. It steps over the session's events, which
// share the key range: a page costs the events between its runs too.
// Only the runs whose status f keeps are listed.
func listRunsTx(tx *bbolt.Tx, sk, bound []byte, fresh []placedRun, queued map[string]*runWrite, f store.RunFilter, limit int) ([]*agentrunnerv1.Run, string, error) {
	c := tx.Bucket(bucketEvents).Cursor()
	key, _ := seekBefore(c, bound)
	key = prevRun(c, sk, key)
	var (
		out  []*agentrunnerv1.Run
		last []byte
	)
	for {
		stored := key != nil && bytes.HasPrefix(key, sk)
		var (
			rec   *agentrunnerv1.Run
			place []byte
			err   error
		)
		switch {
		case !stored && len(fresh) == 0:
			return out, "", nil
		case len(fresh) > 0 && (!stored || bytes.Compare(fresh[0].key, key) > 0):
			rec, place, fresh = fresh[0].rec.CloneVT(), fresh[0].key, fresh[1:]
		default:
			if rec, err = listedRun(tx, sk, key, queued); err != nil {
				return nil, "", err
			}
			place = key
			key, _ = c.Prev()
			key = prevRun(c, sk, key)
		}
		if !f.Keeps(rec.GetStatus()) {
			continue
		}
		if len(out) == limit {
			return out, encodeToken(last), nil
		}
		out, last = append(out, rec), place
	}
}

// listedRun returns the record of the run whose key in session sk's list
// is key: its queued record when there is one.
func listedRun(tx *bbolt.Tx, sk, key []byte, queued map[string]*runWrite) (*agentrunnerv1.Run, error) {
	id, err := runIDOfKey(key, sk)
	if err != nil {
		return nil, fmt.Errorf("run key %x: %w", key, err)
	}
	if w := queued[id]; w != nil {
		return placeQueued(w, key), nil
	}
	return getRun(tx, id)
}

// prevRun steps c back from key over the events of session sk to the
// nearest run key; it returns key when that is one, or not sk's.
func prevRun(c *bbolt.Cursor, sk, key []byte) []byte {
	for key != nil && bytes.HasPrefix(key, sk) && !isRunKey(key, sk) {
		key, _ = c.Prev()
	}
	return key
}

// freshRuns returns the queued records (of one session, whose last
// sequence is anchor) that have no stored record and sort before bound,
// newest first.
func freshRuns(tx *bbolt.Tx, queued map[string]*runWrite, anchor uint64, bound []byte) []placedRun {
	var out []placedRun
	records := tx.Bucket(bucketRunRecords)
	for _, w := range queued {
		if records.Get(recordKey(w.rec.GetRunId())) != nil {
			continue
		}
		if key := w.newKey(anchor); bytes.Compare(key, bound) < 0 {
			out = append(out, placedRun{key: key, rec: w.rec})
		}
	}
	slices.SortFunc(out, func(a, b placedRun) int { return bytes.Compare(b.key, a.key) })
	return out
}

// seekBefore positions c on the last key before bound.
func seekBefore(c *bbolt.Cursor, bound []byte) (key, value []byte) {
	if k, _ := c.Seek(bound); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// ListUnfinishedRuns implements store.RunStore.
func (s *Store) ListUnfinishedRuns(ctx context.Context) ([]*agentrunnerv1.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	queued := s.later.all()
	var placed []placedRun
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		placed, err = unfinishedTx(tx, queued)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(placed, func(a, b placedRun) int {
		ta, tb := a.rec.GetCreateTime(), b.rec.GetCreateTime()
		return cmp.Or(cmp.Compare(ta.GetSeconds(), tb.GetSeconds()), cmp.Compare(ta.GetNanos(), tb.GetNanos()), bytes.Compare(a.key, b.key))
	})
	out := make([]*agentrunnerv1.Run, len(placed))
	for i, p := range placed {
		out[i] = p.rec
	}
	return out, nil
}

// unfinishedTx reads the unfinished runs, with the queued records
// overlaid: a queued record replaces its run's, and lists it only when its
// own status is unfinished. The unfinished runs (PENDING, RUNNING) are
// among the active ones, which the run index lists ('v' entries, see
// runindex.go): recovery reads those records, never every record, and a
// run's start and end write no mark of their own for it.
func unfinishedTx(tx *bbolt.Tx, queued map[string]*runWrite) ([]placedRun, error) {
	var out []placedRun
	c := tx.Bucket(bucketRunRecords).Cursor()
	prefix := []byte{indexActive}
	for entry, _ := c.Seek(prefix); entry != nil && entry[0] == indexActive; entry, _ = c.Next() {
		runID, err := activeEntryRun(entry)
		if err != nil {
			return nil, fmt.Errorf("run_records entry %x: %w", entry, err)
		}
		key, v, err := storedRun(tx, runID)
		switch {
		case err != nil:
			return nil, err
		case key == nil:
			return nil, fmt.Errorf("an index names run %s, which has no record", runID)
		}
		if _, st := requestAndStatusOf(v); !unfinished(st) {
			continue // waiting on input: active, not unfinished
		}
		if w := queued[runID]; w == nil || !bytes.HasPrefix(key, w.sk) {
			rec, err := decodeRun(v)
			if err != nil {
				return nil, err
			}
			out = append(out, placedRun{key: bytes.Clone(key), rec: rec})
		}
	}
	for _, w := range queued {
		if !unfinished(w.rec.GetStatus()) {
			continue
		}
		if key, rec, ok := resolveQueued(tx, w); ok {
			out = append(out, placedRun{key: bytes.Clone(key), rec: rec.CloneVT()})
		}
	}
	return out, nil
}

// activeEntryRun returns the run id of an active entry of the run index,
// 'v' T(app, user) N(create) T(run_id).
func activeEntryRun(entry []byte) (string, error) {
	_, rest, err := readString(entry[1:])
	if err == nil {
		_, rest, err = readString(rest)
	}
	if err != nil {
		return "", err
	}
	if len(rest) < 8 {
		return "", errors.New("short run index entry")
	}
	runID, _, err := readString(rest[8:])
	return runID, err
}

// migrateUnfinishedMarks (schema 9 -> 10) deletes the unfinished marks,
// 'u' T(run_id) in run_records, which schemas 6 to 9 kept beside each
// PENDING or RUNNING run: recovery now reads the run index's active
// entries, which list every such run (since schema 7), and a run's
// writes no longer dirty a leaf of marks. The version is raised so that
// an older binary, which would look for marks no run has any more,
// refuses the file. The keys are collected before they are deleted: a
// bucket must not change under a cursor that walks it.
func migrateUnfinishedMarks(tx *bbolt.Tx) error {
	records := tx.Bucket(bucketRunRecords)
	var marks [][]byte
	c := records.Cursor()
	for k, _ := c.Seek(unfinishedPrefix); k != nil && bytes.HasPrefix(k, unfinishedPrefix); k, _ = c.Next() {
		marks = append(marks, bytes.Clone(k))
	}
	for _, k := range marks {
		if err := records.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// sessionRuns are the keys of a session's run records and of their
// index entries.
type sessionRuns struct {
	records [][]byte // run_records keys: each run's record and run index entries
	reqs    [][]byte // run_requests keys
}

// collectRuns collects the keys DeleteSession deletes with session sk,
// whose keys in the events bucket are evKeys.
func collectRuns(tx *bbolt.Tx, sk []byte, evKeys [][]byte) (*sessionRuns, error) {
	r := &sessionRuns{reqs: collectPrefix(tx.Bucket(bucketRunReqs), sk)}
	for _, key := range evKeys {
		if !isRunKey(key, sk) {
			continue
		}
		id, err := runIDOfKey(key, sk)
		if err != nil {
			return nil, fmt.Errorf("run key: %w", err)
		}
		stored, _, err := storedRun(tx, id)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(stored, key) {
			r.records = append(r.records, recordKey(id))
			idx, err := sessionIndexKeys(key, id)
			if err != nil {
				return nil, fmt.Errorf("run key: %w", err)
			}
			r.records = append(r.records, idx...)
		}
	}
	return r, nil
}

// delete deletes the records of the session's runs and their index
// entries; the session's list goes with its events.
func (r *sessionRuns) delete(tx *bbolt.Tx) error {
	for _, b := range []struct {
		bucket *bbolt.Bucket
		keys   [][]byte
	}{{tx.Bucket(bucketRunRecords), r.records}, {tx.Bucket(bucketRunReqs), r.reqs}} {
		for _, key := range b.keys {
			if err := del(b.bucket, key); err != nil { // a no-op for the active entry of an ended run
				return err
			}
		}
	}
	return nil
}

// migrateRuns (schema 2 -> 3) has nothing to convert: the run buckets
// start empty, and Open creates every bucket before it migrates.
func migrateRuns(*bbolt.Tx) error { return nil }

// bucketRunsV3 held the run records of schema 3, keyed
// T(app, user, session) U(create_time) T(run_id).
var bucketRunsV3 = []byte("runs")

// migrateRunsIntoEvents (schema 3 -> 4) moves every record of bucket runs
// into the events bucket, anchored after its first event (or, for a run
// that has none, after its session's last), points the indexes at the new
// keys, and drops bucket runs.
func migrateRunsIntoEvents(tx *bbolt.Tx) error {
	old := tx.Bucket(bucketRunsV3)
	if old == nil {
		return nil
	}
	var keys, values [][]byte
	c := old.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
	}
	for i, oldKey := range keys {
		if err := moveRunRecord(tx, oldKey, values[i]); err != nil {
			return err
		}
	}
	return tx.DeleteBucket(bucketRunsV3)
}

// moveRunRecord moves one schema 3 record to its schema 4 key.
func moveRunRecord(tx *bbolt.Tx, oldKey, v []byte) error {
	rec, err := decodeRun(v)
	if err != nil {
		return err
	}
	sk := sessionKey(store.RunKey(rec))
	if !bytes.HasPrefix(oldKey, sk) || len(oldKey) < len(sk)+8 {
		return fmt.Errorf("run %s: its key is not under its session", rec.GetRunId())
	}
	nanos := int64(binary.BigEndian.Uint64(oldKey[len(sk):]) ^ 1<<63)
	anchor := rec.GetFirstSequence()
	if anchor > 0 {
		anchor-- // right after the event before its first, as a new run's record
	} else {
		anchor = lastSequenceOf(tx.Bucket(bucketSessions).Get(sk))
	}
	key := runKey(sk, anchor, nanos, rec.GetRunId())
	if err := tx.Bucket(bucketEvents).Put(key, v); err != nil {
		return err
	}
	if ids := tx.Bucket(bucketRunIDsV5); bytes.Equal(ids.Get(runIDKey(rec.GetRunId())), oldKey) {
		if err := ids.Put(runIDKey(rec.GetRunId()), key); err != nil {
			return err
		}
	}
	if req := rec.GetRequestId(); req != "" {
		reqs := tx.Bucket(bucketRunReqs)
		if rk := runRequestKey(sk, req); bytes.Equal(reqs.Get(rk), oldKey) {
			if err := reqs.Put(rk, key); err != nil {
				return err
			}
		}
	}
	unf := tx.Bucket(bucketUnfinishedV5)
	if !exists(unf, oldKey) {
		return nil
	}
	if err := unf.Delete(oldKey); err != nil {
		return err
	}
	return unf.Put(key, []byte{})
}

// Buckets of schemas 3 to 5, which kept the records in the events
// bucket at their run keys: run_ids, T(run_id) -> run key, and
// unfinished_runs, run key -> empty.
var (
	bucketRunIDsV5     = []byte("run_ids")
	bucketUnfinishedV5 = []byte("unfinished_runs")
)

// migrateRunRecords (schema 5 -> 6) moves every record out of the events
// bucket into run_records, leaving its key there (with an empty value)
// as the session's list of runs, marks the unfinished ones there, and
// drops run_ids and unfinished_runs. A file that never had run_ids (it
// was made before schema 3, and migrated here) has no records.
func migrateRunRecords(tx *bbolt.Tx) error {
	ids := tx.Bucket(bucketRunIDsV5)
	if ids == nil {
		return nil
	}
	var runIDs []string
	var keys [][]byte
	c := ids.Cursor()
	for id, key := c.First(); id != nil; id, key = c.Next() {
		runID, _, err := readString(id)
		if err != nil {
			return fmt.Errorf("run_ids key %x: %w", id, err)
		}
		runIDs, keys = append(runIDs, runID), append(keys, bytes.Clone(key))
	}
	events, records := tx.Bucket(bucketEvents), tx.Bucket(bucketRunRecords)
	for i, key := range keys {
		v := bytes.Clone(events.Get(key))
		if v == nil {
			return fmt.Errorf("run_ids names run %s, which has no record", runIDs[i])
		}
		if err := records.Put(recordKey(runIDs[i]), recordEntry(key, v)); err != nil {
			return err
		}
		if err := events.Put(key, []byte{}); err != nil {
			return err
		}
		if _, st := requestAndStatusOf(v); unfinished(st) {
			if err := records.Put(unfinishedKey(runIDs[i]), []byte{}); err != nil {
				return err
			}
		}
	}
	if tx.Bucket(bucketUnfinishedV5) != nil {
		if err := tx.DeleteBucket(bucketUnfinishedV5); err != nil {
			return err
		}
	}
	return tx.DeleteBucket(bucketRunIDsV5)
}

// runQueue holds the records PutRunLater queued until the committer has
// written them: pending until a commit takes them, writing while that
// commit runs. Reads overlay both, pending first, taking their copy
// before they open their transaction: a record leaves the queue only once
// a transaction opened after that sees it.
//
// The first record queued into an empty queue sets a timer for delay; the
// committer commits the queue when it fires, unless a commit took the
// records first (take stops the timer). Queuing wakes no goroutine: a
// run's final record usually rides along with the next write, and costs
// no more than setting a timer.
type runQueue struct {
	mu      sync.Mutex
	pending map[string]*runWrite // by run id
	writing map[string]*runWrite // by run id
	closed  bool
	delay   time.Duration
	timer   *time.Timer // set while armed
	armed   bool
}

func (q *runQueue) init(delay time.Duration) {
	q.pending = map[string]*runWrite{}
	q.delay = delay
	q.timer = time.NewTimer(time.Hour)
	q.timer.Stop()
}

// due is the channel the timer fires on: the oldest pending record has
// waited delay (or a commit took it meanwhile, and the fire finds less).
func (q *runQueue) due() <-chan time.Time { return q.timer.C }

// fired tells the queue its timer has fired.
func (q *runQueue) fired() {
	q.mu.Lock()
	q.armed = false
	q.mu.Unlock()
}

// add queues w in place of any pending record of its run, and sets the
// timer when w is the first; false once the queue is closed. A record
// never waits longer than delay: the timer set for the first goes off for
// every record queued after it.
func (q *runQueue) add(w *runWrite) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if len(q.pending) == 0 && !q.armed {
		q.timer.Reset(q.delay)
		q.armed = true
	}
	q.pending[w.rec.GetRunId()] = w
	return true
}

// take moves every pending record to writing, and returns them.
func (q *runQueue) take() []*runWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return nil
	}
	out := make([]*runWrite, 0, len(q.pending))
	for _, w := range q.pending {
		out = append(out, w)
	}
	q.writing, q.pending = q.pending, make(map[string]*runWrite, len(q.pending))
	if q.armed {
		// Nothing is left to wait for; since Go 1.23 a stopped timer's
		// channel holds no stale fire.
		q.timer.Stop()
		q.armed = false
	}
	return out
}

// written forgets the records take returned: they are committed (or
// lost, and logged).
func (q *runQueue) written() {
	q.mu.Lock()
	q.writing = nil
	q.mu.Unlock()
}

// close refuses records from now on.
func (q *runQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.timer.Stop()
	q.armed = false
	q.mu.Unlock()
}

// get returns the queued record of a run, or nil.
func (q *runQueue) get(runID string) *runWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w := q.pending[runID]; w != nil {
		return w
	}
	return q.writing[runID]
}

// all returns every queued record by run id, the newest of each run.
func (q *runQueue) all() map[string]*runWrite { return q.filter(nil) }

// ofSession returns the queued records of session sk by run id.
func (q *runQueue) ofSession(sk []byte) map[string]*runWrite {
	return q.filter(sk)
}

func (q *runQueue) filter(sk []byte) map[string]*runWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending)+len(q.writing) == 0 {
		return nil
	}
	out := make(map[string]*runWrite, len(q.pending)+len(q.writing))
	for _, m := range []map[string]*runWrite{q.writing, q.pending} {
		for id, w := range m {
			out[id] = w
		}
	}
	for id, w := range out {
		if sk != nil && !bytes.Equal(w.sk, sk) {
			delete(out, id)
		}
	}
	return out
}
