// Package memory is long-term memory: the Service agents search through
// (agent.InvocationContext.Memory binds it to the session's app and user),
// and StoreMemory, a keyword search over the stored sessions.
//
// Imports: store and the generated messages. It must not import the
// runner, any agent, tool or plugin package, or gRPC (runner/deps_test.go
// checks).
package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Service searches long-term memory.
type Service interface {
	Search(ctx context.Context, q Query) ([]*Entry, error)
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
	// Limit bounds the number of entries; 0 means DefaultLimit.
	Limit int
}

// DefaultLimit bounds a search that sets no Limit.
const DefaultLimit = 20

// Entry is one remembered turn.
type Entry struct {
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

// StoreMemory is an in-process Service that searches the stored sessions
// of a user for keywords. It reads the user's sessions on each search,
// which suits small histories and tests; a real deployment would index.
type StoreMemory struct {
	store SessionLister
}

// NewStoreMemory returns a memory over s.
func NewStoreMemory(s SessionLister) *StoreMemory { return &StoreMemory{store: s} }

// Search returns the events of the user's sessions whose text contains any
// word of the query (case-insensitive), up to the limit. Sessions are read
// most recently updated first (ties by session id); within a session the
// entries are in event order. A session deleted while the search runs is
// skipped.
func (m *StoreMemory) Search(ctx context.Context, q Query) ([]*Entry, error) {
	words := keywords(q.Query)
	if len(words) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	sessions, err := m.sessions(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []*Entry
	for _, s := range sessions {
		k := store.SessionKey{App: q.App, User: q.User, Session: s.GetSessionId()}
		_, events, err := m.store.GetSession(ctx, k, store.GetOptions{})
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		for _, ev := range events {
			if !matches(words, textOf(ev.GetContent())) {
				continue
			}
			out = append(out, &Entry{SessionID: s.GetSessionId(), Author: ev.GetAuthor(), Content: ev.GetContent(), Time: ev.GetTimestamp().AsTime()})
			if len(out) == limit {
				return out, nil
			}
		}
	}
	return out, nil
}

// sessions lists the user's sessions but the excluded one, most recently
// updated first.
func (m *StoreMemory) sessions(ctx context.Context, q Query) ([]*agentrunnerv1.Session, error) {
	var all []*agentrunnerv1.Session
	page := store.Page{Size: store.MaxPageSize}
	for {
		sessions, next, err := m.store.ListSessions(ctx, q.App, q.User, page)
		if err != nil {
			return nil, fmt.Errorf("search memory: %w", err)
		}
		for _, s := range sessions {
			if s.GetSessionId() != q.ExcludeSession {
				all = append(all, s)
			}
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	slices.SortStableFunc(all, func(a, b *agentrunnerv1.Session) int {
		if c := b.GetUpdateTime().AsTime().Compare(a.GetUpdateTime().AsTime()); c != 0 {
			return c
		}
		return cmp.Compare(a.GetSessionId(), b.GetSessionId())
	})
	return all, nil
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

// textOf concatenates the non-thought text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}
