package pgstore

import (
	"context"
	"sync"
	"time"
)

// The notifications of the hot path (each append's run, each run
// record) are sent after their write commits, from one goroutine, in
// batches. A pg_notify inside the write's own transaction would make
// PostgreSQL serialize that transaction's commit with every other
// notifying one (it holds an exclusive lock from queueing the
// notification through the WAL flush), which undoes the group commit
// that concurrent sessions' appends share: at 256 sessions, runs/s fell
// by a third. A notification sent after its commit still reaches
// listeners once the write is visible; one lost in a crash between the
// two is lost as one sent while a listener reconnects is, and a reader
// catches up at the run's next notification or at its final record.

// note is one notification waiting to be sent.
type note struct{ channel, payload string }

const (
	outboxSize  = 4096 // notifications waiting before writers wait for the sender
	outboxBatch = 256  // notifications one statement sends at most
	// outboxTimeout bounds one batch's statement, and Close's flush.
	outboxTimeout = 5 * time.Second
)

// sqlNotifyMany sends a batch of notifications in one statement (and one
// transaction of its own, which writes no WAL).
const sqlNotifyMany = "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS n(c, p)"

// outbox is the store's sender of notifications after commit. Its
// goroutine starts with the first notification and stops at Close,
// sending what is still queued first.
type outbox struct {
	once sync.Once
	ch   chan note
	stop chan struct{}
	done chan struct{} // closed when the goroutine has ended; nil if it never started
	mu   sync.Mutex    // guards done's start against Close
}

func newOutbox() outbox {
	return outbox{ch: make(chan note, outboxSize), stop: make(chan struct{})}
}

// notifyAfterCommit queues the notifications of a committed write. It
// waits only while outboxSize notifications are queued already, and not
// at all once the store is closing.
func (s *Store) notifyAfterCommit(notes []note) {
	if len(notes) == 0 {
		return
	}
	s.out.once.Do(func() {
		s.out.mu.Lock()
		defer s.out.mu.Unlock()
		select {
		case <-s.out.stop:
			return // closed meanwhile: nothing will send
		default:
		}
		s.out.done = make(chan struct{})
		go s.sendNotes()
	})
	for _, n := range notes {
		select {
		case s.out.ch <- n:
		case <-s.out.stop:
			return
		}
	}
}

// sendNotes sends queued notifications in batches until Close.
func (s *Store) sendNotes() {
	defer close(s.out.done)
	batch := make([]note, 0, outboxBatch)
	for {
		select {
		case n := <-s.out.ch:
			batch = append(batch[:0], n)
		case <-s.out.stop:
			s.flushNotes(batch[:0])
			return
		}
		for more := true; more && len(batch) < outboxBatch; {
			select {
			case n := <-s.out.ch:
				batch = append(batch, n)
			default:
				more = false
			}
		}
		s.sendBatch(batch)
	}
}

// flushNotes sends what is still queued when the store closes.
func (s *Store) flushNotes(batch []note) {
	for {
		select {
		case n := <-s.out.ch:
			if batch = append(batch, n); len(batch) == outboxBatch {
				s.sendBatch(batch)
				batch = batch[:0]
			}
		default:
			if len(batch) > 0 {
				s.sendBatch(batch)
			}
			return
		}
	}
}

// sendBatch sends notifications in one statement. A failure is logged:
// the writes they tell of are stored, and readers find them at the next
// notification or by reading the store.
func (s *Store) sendBatch(batch []note) {
	chans := make([]string, len(batch))
	payloads := make([]string, len(batch))
	for i, n := range batch {
		chans[i], payloads[i] = n.channel, n.payload
	}
	ctx, cancel := context.WithTimeout(context.Background(), outboxTimeout)
	defer cancel()
	if _, err := s.pool.Exec(ctx, sqlNotifyMany, chans, payloads); err != nil {
		s.opts.Logger.Warn("store notifications: send after commit", "notifications", len(batch), "err", err)
	}
}

// closeOutbox stops the sender after it has sent what was queued,
// waiting at most outboxTimeout.
func (s *Store) closeOutbox() {
	s.out.mu.Lock()
	close(s.out.stop)
	done := s.out.done
	s.out.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(outboxTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
