package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrunner/agentrunner/store"
)

// Notifications (LISTEN/NOTIFY). A write's notification goes out only
// once the write commits (and never for one rolled back): the pipelined
// appends and run records send theirs right after their COMMIT, in the
// same round trip (pipeline.go), the other writes send pg_notify inside
// their own transaction. Payloads
// are small JSON objects (PostgreSQL refuses one of 8000 bytes or more):
// ids and a sequence, never an event. Each store keeps one connection of
// its own that listens, outside the pool, started by the first Subscribe
// and closed by Close; it reconnects when the connection is lost, and
// every (re)connection is told to the subscribers as NoticeResync, since
// notifications sent while it was away are lost.

const (
	chanRun    = "agentrunner_run"    // a run's event or record was stored
	chanQueue  = "agentrunner_queue"  // a run was queued
	chanCancel = "agentrunner_cancel" // cancel a run, wherever it runs
)

// listenerName is the application_name of the listening connection, by
// which an operator (or a test) finds it in pg_stat_activity.
const listenerName = "agentrunner-listener"

// maxPayload keeps payloads under PostgreSQL's limit of 8000 bytes.
const maxPayload = 7900

var _ store.RunNotifier = (*Store)(nil)

// payload is every channel's payload; fields are left out when empty.
type payload struct {
	RunID    string `json:"r,omitempty"`
	Sequence uint64 `json:"q,omitempty"`
	App      string `json:"a,omitempty"`
	User     string `json:"u,omitempty"`
	Session  string `json:"s,omitempty"`
	Cause    string `json:"c,omitempty"`
}

func (p payload) encode() string {
	b, _ := json.Marshal(p) // strings and a number: never fails
	return string(b)
}

// runPayload is chanRun's payload; empty (no notification) for a run id
// too long to fit, which no attacher can name anyway.
func runPayload(runID string, seq uint64) string {
	if runID == "" || len(runID) > maxKeyPart {
		return ""
	}
	return payload{RunID: runID, Sequence: seq}.encode()
}

// queuedPayload is chanQueue's payload. A session key too long to fit is
// left out: subscribers then look at every session's queue.
func queuedPayload(k store.SessionKey, runID string) string {
	p := payload{RunID: runID, App: k.App, User: k.User, Session: k.Session}.encode()
	if len(p) > maxPayload {
		return payload{}.encode()
	}
	return p
}

// note is one notification to send.
type note struct{ channel, payload string }

// sqlNotify sends a notification with the transaction's commit.
const sqlNotify = "SELECT pg_notify($1, $2)"

// notifyTx queues a notification in tx; an empty payload sends none.
func notifyTx(ctx context.Context, tx pgx.Tx, channel, p string) error {
	if p == "" {
		return nil
	}
	if _, err := tx.Exec(ctx, sqlNotify, channel, p); err != nil {
		return fmt.Errorf("notify %s: %w", channel, err)
	}
	return nil
}

// NotifyCancel implements store.RunNotifier.
func (s *Store) NotifyCancel(ctx context.Context, runID, cause string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if err := checkParts(runID, cause); err != nil {
		return err
	}
	p := payload{RunID: runID, Cause: cause}.encode()
	if len(p) > maxPayload {
		return fmt.Errorf("cancel of run %s: cause too long: %w", runID, store.ErrInvalidArgument)
	}
	return s.query(ctx, func() error {
		_, err := s.pool.Exec(ctx, sqlNotify, chanCancel, p)
		return err
	})
}

// NotifyQueued implements store.RunNotifier.
func (s *Store) NotifyQueued(ctx context.Context, k store.SessionKey) error {
	if err := validateKey(k); err != nil {
		return err
	}
	return s.query(ctx, func() error {
		_, err := s.pool.Exec(ctx, sqlNotify, chanQueue, queuedPayload(k, ""))
		return err
	})
}

// listener fans the notifications of the store's listening connection
// out to the subscribers.
type listener struct {
	mu     sync.Mutex
	subs   map[int]func(store.Notice)
	next   int
	stop   context.CancelFunc // nil until the first Subscribe
	done   chan struct{}      // closed when the listening goroutine ends
	closed bool
}

// Subscribe implements store.RunNotifier.
func (s *Store) Subscribe(fn func(store.Notice)) func() {
	l := &s.notes
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs == nil {
		l.subs = map[int]func(store.Notice){}
	}
	id := l.next
	l.next++
	l.subs[id] = fn
	if l.stop == nil && !l.closed {
		ctx, cancel := context.WithCancel(context.Background())
		l.stop, l.done = cancel, make(chan struct{})
		go s.listen(ctx, l.done)
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs, id)
	}
}

// Subscribers returns how many subscriptions are open, for checks and
// tests (a reader that went away must have closed its own).
func (s *Store) Subscribers() int {
	s.notes.mu.Lock()
	defer s.notes.mu.Unlock()
	return len(s.notes.subs)
}

// stopListening ends the listening goroutine, for Close.
func (l *listener) stopListening() {
	l.mu.Lock()
	l.closed = true
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// deliver hands n to every subscriber.
func (l *listener) deliver(n store.Notice) {
	l.mu.Lock()
	fns := make([]func(store.Notice), 0, len(l.subs))
	for _, fn := range l.subs {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(n)
	}
}

// listen keeps a listening connection until ctx ends, reconnecting with
// a backoff when it is lost.
func (s *Store) listen(ctx context.Context, done chan struct{}) {
	defer close(done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		connected, err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			backoff = 50 * time.Millisecond
		}
		s.opts.Logger.Warn("store notifications: listening connection lost; reconnecting", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listenOnce connects, listens to the store's channels and delivers what
// arrives until the connection fails or ctx ends. It reports whether it
// got as far as listening.
func (s *Store) listenOnce(ctx context.Context) (bool, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	for _, ch := range []string{chanRun, chanQueue, chanCancel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return false, fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	s.notes.deliver(store.Notice{Kind: store.NoticeResync})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if notice, ok := parseNotice(n.Channel, n.Payload); ok {
			s.notes.deliver(notice)
		}
	}
}

// parseNotice decodes a notification of one of the store's channels.
func parseNotice(channel, raw string) (store.Notice, bool) {
	var p payload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return store.Notice{}, false
	}
	n := store.Notice{RunID: p.RunID, Sequence: p.Sequence, Cause: p.Cause, Key: store.SessionKey{App: p.App, User: p.User, Session: p.Session}}
	switch channel {
	case chanRun:
		n.Kind = store.NoticeRun
	case chanQueue:
		n.Kind = store.NoticeQueued
	case chanCancel:
		n.Kind = store.NoticeCancel
	default:
		return store.Notice{}, false
	}
	return n, true
}
