package pgstore

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// BatchWrite is one append of CommitBatch.
type BatchWrite struct {
	Ctx   context.Context
	Key   store.SessionKey
	Event *agentrunnerv1.Event
	// BadID gives the event an id PostgreSQL refuses (a NUL byte), which
	// AppendEvent would have refused first: a write that fails only once
	// the batch's statements reach the database.
	BadID bool

	Stored *agentrunnerv1.Event // the appended event
	Err    error                // the append's outcome
}

// CommitBatch appends the events of ws, counted, in one batch, as if
// their writers had waited together, and sets their outcomes.
func (s *Store) CommitBatch(ws []*BatchWrite) error {
	ps := make([]*pipeWrite, len(ws))
	for i, w := range ws {
		ew, err := s.prepareEvent(w.Key, w.Event, true)
		if err != nil {
			return err
		}
		if w.BadID {
			ew.stored.Id = "bad\x00id"
		}
		ps[i] = &pipeWrite{k: w.Key, ev: &ew, ctx: w.Ctx, done: make(chan struct{})}
	}
	s.commitBatch(append([]*pipeWrite(nil), ps...)) // it sorts its argument
	for i, p := range ps {
		<-p.done
		ws[i].Stored, ws[i].Err = p.stored, p.err
	}
	return nil
}
