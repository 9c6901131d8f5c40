package runner

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Memory is what an agent sees of long-term memory: the user's past
// sessions of the app.
type Memory interface {
	// Search returns past turns that match query.
	Search(ctx context.Context, query string) ([]*MemoryEntry, error)
}

// MemoryService searches long-term memory; the Runner binds it to the
// session's app and user for InvocationContext.Memory.
type MemoryService interface {
	Search(ctx context.Context, q MemoryQuery) ([]*MemoryEntry, error)
}

// MemoryQuery is one memory search.
type MemoryQuery struct {
	// App and User scope the search.
	App, User string
	// Query is free text; its words are the keywords.
	Query string
	// ExcludeSession, when set, leaves that session out (the current one,
	// which the agent already sees).
	ExcludeSession string
	// Limit bounds the number of entries; 0 means DefaultMemoryLimit.
	Limit int
}

// DefaultMemoryLimit bounds a search that sets no Limit.
const DefaultMemoryLimit = 20

// MemoryEntry is one remembered turn.
type MemoryEntry struct {
	SessionID string
	Author    string
	Content   *agentrunnerv1.Content
	Time      time.Time
}

// SessionLister is the storage StoreMemory reads. Implemented by
// *boltstore.Store.
type SessionLister interface {
	ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error)
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
}

// StoreMemory is an in-process MemoryService that searches the stored
// sessions of a user for keywords. It reads every session of the user on
// each search, which suits small histories and tests; a real deployment
// would index.
type StoreMemory struct {
	store SessionLister
}

// NewStoreMemory returns a memory over s.
func NewStoreMemory(s SessionLister) *StoreMemory { return &StoreMemory{store: s} }

// Search returns the events of the user's sessions whose text contains any
// word of the query (case-insensitive), most recent sessions' entries in
// event order, up to the limit.
func (m *StoreMemory) Search(ctx context.Context, q MemoryQuery) ([]*MemoryEntry, error) {
	words := keywords(q.Query)
	if len(words) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultMemoryLimit
	}
	var out []*MemoryEntry
	page := store.Page{Size: store.MaxPageSize}
	for {
		sessions, next, err := m.store.ListSessions(ctx, q.App, q.User, page)
		if err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		for _, s := range sessions {
			if s.GetSessionId() == q.ExcludeSession {
				continue
			}
			k := store.SessionKey{App: q.App, User: q.User, Session: s.GetSessionId()}
			_, events, err := m.store.GetSession(ctx, k, store.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("search memory: %w", err)
			}
			for _, ev := range events {
				if !matches(words, textOf(ev.GetContent())) {
					continue
				}
				out = append(out, &MemoryEntry{
					SessionID: s.GetSessionId(),
					Author:    ev.GetAuthor(),
					Content:   ev.GetContent(),
					Time:      ev.GetTimestamp().AsTime(),
				})
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if next == "" {
			return out, nil
		}
		page.Token = next
	}
}

// keywords splits text into lower-case words of letters and digits.
func keywords(text string) map[string]bool {
	words := make(map[string]bool)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), isWordSep) {
		words[w] = true
	}
	return words
}

func isWordSep(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

func matches(words map[string]bool, text string) bool {
	if text == "" {
		return false
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), isWordSep) {
		if words[w] {
			return true
		}
	}
	return false
}
