package llmagent

import (
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// historyMemo keeps, for each session history an agent read lately, the
// contents it made of it (see plain), so that its next model call in the
// same session reads only the events added since, not the whole history
// again: a long session's calls cost what they add, not its length.
//
// A history is known by its array: the runner lends a run the session's
// events in an array that only grows at its end (the invocation appends
// what it stores; the runner's history cache appends, in place, what
// later runs add), and no element once there is written again. So an
// array seen with n events still holds those n when seen longer. A new
// array (the cache grew it elsewhere, trimmed it, or read it afresh) is a
// new history, made whole once. Only the events of the whole session are
// shared so (outside branches); a branch's are a new copy every call.
type historyMemo struct {
	mu      sync.Mutex
	entries map[**agentrunnerv1.Event]memoEntry
	events  int // the entries' events, together
}

// memoEntry is what an array's first n events made for the agent self.
type memoEntry struct {
	self string
	n    int
	last *agentrunnerv1.Event // events[n-1], checked as well
	p    plain
}

// The memo's bounds: past them it starts afresh. Entries hold their
// arrays and contents, which the sessions' runs hold anyway while they
// go on.
const (
	memoMaxEntries = 4096
	memoMaxEvents  = 1 << 20
)

// history is modelHistory for the events of the whole session (branch
// ""), from what the memo knows of them.
//
// An entry's contents grow in place, past the end of every history
// handed out before (each is clipped, so that nobody appends to it in
// turn): the call that extends an entry takes it out of the memo while
// it does, and a call on the same array meanwhile makes its history
// whole, as without the memo.
func (m *historyMemo) history(self string, events []*agentrunnerv1.Event) history {
	if len(events) == 0 {
		return modelHistory(self, events, false)
	}
	key := &events[0]
	e, ok := m.take(key)
	if !ok || e.self != self || e.n > len(events) || events[e.n-1] != e.last {
		e = memoEntry{self: self, p: plain{out: make([]*agentrunnerv1.Content, 0, len(events))}}
	}
	if !e.p.extend(self, events[e.n:]) {
		return modelHistory(self, events, false)
	}
	e.n, e.last = len(events), events[len(events)-1]
	m.put(key, e)
	h := e.p.history()
	h.contents = h.contents[:len(h.contents):len(h.contents)]
	return h
}

func (m *historyMemo) take(key **agentrunnerv1.Event) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if ok {
		delete(m.entries, key)
		m.events -= e.n
	}
	return e, ok
}

func (m *historyMemo) put(key **agentrunnerv1.Event, e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.entries[key]; ok {
		m.events -= old.n
	}
	if m.entries == nil || len(m.entries) >= memoMaxEntries || m.events+e.n > memoMaxEvents {
		m.entries, m.events = map[**agentrunnerv1.Event]memoEntry{}, 0
	}
	m.entries[key] = e
	m.events += e.n
}
