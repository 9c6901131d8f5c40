package llmagent

import (
	"sync"
	"weak"

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
	mu sync.Mutex
	// entries are keyed by the arrays, weakly: an entry does not keep a
	// session's events alive once the runner let go of them, and an
	// array made later at the same address is another key.
	entries map[weak.Pointer[*agentrunnerv1.Event]]memoEntry
	events  int // the entries' events, together
	puts    int // since the last sweep of dead entries
}

// memoEntry is what an array's first n events made for the agent self.
type memoEntry struct {
	self    string
	n       int
	lastSeq uint64 // events[n-1]'s sequence, checked as well
	p       plain
}

// The memo's bounds: past them it drops entries. An entry holds the
// contents it made (the session events' own, shared, and other agents'
// rephrased), so entries whose arrays are gone are swept every
// memoSweepEvery entries put, or when the memo is full.
const (
	memoMaxEntries = 1024
	memoMaxEvents  = 1 << 18
	memoSweepEvery = 256
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
	key := weak.Make(&events[0])
	e, ok := m.take(key)
	if !ok || e.self != self || e.n > len(events) || events[e.n-1].GetSequence() != e.lastSeq {
		e = memoEntry{self: self, p: plain{out: make([]*agentrunnerv1.Content, 0, len(events))}}
	}
	if !e.p.extend(self, events[e.n:]) {
		return modelHistory(self, events, false)
	}
	e.n, e.lastSeq = len(events), events[len(events)-1].GetSequence()
	m.put(key, e)
	h := e.p.history()
	h.contents = h.contents[:len(h.contents):len(h.contents)]
	return h
}

func (m *historyMemo) take(key weak.Pointer[*agentrunnerv1.Event]) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if ok {
		delete(m.entries, key)
		m.events -= e.n
	}
	return e, ok
}

func (m *historyMemo) put(key weak.Pointer[*agentrunnerv1.Event], e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[weak.Pointer[*agentrunnerv1.Event]]memoEntry{}
	}
	if old, ok := m.entries[key]; ok {
		delete(m.entries, key)
		m.events -= old.n
	}
	if e.n > memoMaxEvents {
		return // a history larger than the memo is made whole every call
	}
	// Dead entries are swept every memoSweepEvery puts, not on every put
	// of a full memo: with more sessions than entries (thousands of runs
	// in flight) the memo stays full, and a sweep of every entry on each
	// model call cost 3.5% of the server's CPU.
	m.puts++
	if m.puts >= memoSweepEvery {
		m.puts = 0
		for k, old := range m.entries {
			if k.Value() == nil {
				delete(m.entries, k)
				m.events -= old.n
			}
		}
	}
	// Still full: any entries go (the map's order is as good as any).
	for k, old := range m.entries {
		if len(m.entries) < memoMaxEntries && m.events+e.n <= memoMaxEvents {
			break
		}
		delete(m.entries, k)
		m.events -= old.n
	}
	m.entries[key] = e
	m.events += e.n
}
