// Package memory is long-term memory: the Service agents search through
// (agent.InvocationContext.Memory binds it to the session's app and user)
// and sessions are added to, and Index, the Service over the store's
// inverted index (IndexSession and SearchMemory of boltstore and pgstore).
//
// A search is scoped to one app and one user: nothing of another user or
// another app is ever returned.
//
// Imports: store and the generated messages. It must not import the
// runner, any agent, tool or plugin package, or gRPC (runner/deps_test.go
// checks).
package memory

import (
	"context"
	"fmt"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Service is long-term memory.
type Service interface {
	// AddSession adds a session to memory: its events so far and, from
	// then on, every event appended to it. Adding a session again is
	// cheap, so that a runner may add it after every event. A missing
	// session is an error wrapping store.ErrNotFound.
	AddSession(ctx context.Context, k store.SessionKey) error
	// Search returns one page of the events of the user's sessions in
	// memory that match the query, best first, and the token of the next
	// page (empty at the end).
	Search(ctx context.Context, q Query) ([]*Entry, string, error)
}

// Query is one memory search.
type Query struct {
	// App and User scope the search.
	App, User string
	// Query is free text; its words are the keywords.
	Query string
	// ExcludeSession, when set, leaves that session out (the current one,
	// which the agent already sees).
	ExcludeSession string
	// Limit bounds the number of entries; 0 means DefaultLimit, and it is
	// capped at store.MaxPageSize.
	Limit int
	// PageToken continues a previous search with the same query.
	PageToken string
	// MaxBytes, when positive, bounds the encoded size of the entries'
	// events: the page ends before the entry that would pass it (a page
	// holds at least one).
	MaxBytes int
}

// DefaultLimit bounds a search that sets no Limit.
const DefaultLimit = 20

// Entry is one remembered event.
type Entry struct {
	SessionID string
	// Sequence is the event's sequence in its session.
	Sequence uint64
	Author   string
	Content  *agentrunnerv1.Content
	Time     time.Time
}

// Indexer is the storage Index uses. Implemented by *boltstore.Store and
// *pgstore.Store.
type Indexer interface {
	IndexSession(ctx context.Context, k store.SessionKey) error
	SearchMemory(ctx context.Context, q store.MemoryQuery) ([]store.MemoryHit, string, error)
}

// Index is the Service over a store's memory index: sessions added are
// indexed as their events are appended, and a search reads the postings
// of its terms, never the user's history.
type Index struct {
	store Indexer
}

// NewIndex returns the memory over s.
func NewIndex(s Indexer) *Index { return &Index{store: s} }

// AddSession implements Service.
func (m *Index) AddSession(ctx context.Context, k store.SessionKey) error {
	if err := m.store.IndexSession(ctx, k); err != nil {
		return fmt.Errorf("add session to memory: %w", err)
	}
	return nil
}

// Search implements Service.
func (m *Index) Search(ctx context.Context, q Query) ([]*Entry, string, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	hits, next, err := m.store.SearchMemory(ctx, store.MemoryQuery{
		App: q.App, User: q.User, Text: q.Query, ExcludeSession: q.ExcludeSession,
		Page: store.Page{Size: limit, Token: q.PageToken, MaxBytes: q.MaxBytes},
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]*Entry, 0, len(hits))
	for _, h := range hits {
		ev := h.Event
		out = append(out, &Entry{SessionID: h.SessionID, Sequence: ev.GetSequence(), Author: ev.GetAuthor(),
			Content: ev.GetContent(), Time: ev.GetTimestamp().AsTime()})
	}
	return out, next, nil
}

// Text is the text of an entry that memory matched: its content's
// non-thought text parts, one per line.
func Text(e *Entry) string {
	return store.MemoryText(&agentrunnerv1.Event{Content: e.Content})
}
