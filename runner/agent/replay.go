package agent

import (
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// A resumed run (ResumeRun, or recovery after a crash) goes on exactly
// where it was cut: the runner runs the run's first agent again, and
// every agent that starts finds out from the run's Replay whether it had
// run before the cut. An agent whose earlier run had finished (a final
// answer marked turn_complete, the end the runner stores for a custom
// agent that returned without marking one (IsEnd), or its place taken by
// the next agent of a sequence or loop) is skipped whole: nothing of it runs, nothing is
// stored again. An agent cut while it ran goes on: its before-callbacks
// are not called again, an agent that had handed over to a transfer
// target goes on with the target, and an LLM agent goes on from the
// history, which holds what it had done. Agents the run had not reached
// run as they would have.
//
// The k-th start of an agent in the resumed run is its k-th run before
// the cut: workflow agents start their children in a fixed order, which
// depends only on the children's ends and escalations, and the Replay
// gives those as they were.

// occurrence is one run of one agent in the run's stored events.
type occurrence struct {
	name   string
	parent *occurrence // the occurrence that ran this one (tree parent, or the agent that transferred to it)
	done   bool        // it finished before the cut
	// started: it stored an event, or an agent under it did, before the
	// cut (the run's first agent has an occurrence from the start).
	started bool
	// escalated: an event of it or under it escalated, which the loop
	// running it reads.
	escalated bool
	// transfer is the agent it handed over to.
	transfer string
	// active is the child running last (sequential and loop agents);
	// finished the children that finished (parallel agents).
	active   string
	finished map[string]bool
	iter     int  // loop passes completed
	after    bool // an after-callback event was attributed to it
}

// Replay is what a resumed run's agents read of their runs before the
// cut. Safe for concurrent use (parallel branches take their turns from
// their own goroutines).
type Replay struct {
	mu   sync.Mutex
	occs map[string][]*occurrence
	next map[string]int
	// tops are the agents the runner itself ran, in order: the first,
	// then the targets of transfers it followed.
	tops []string
	// finished: the last of them had finished, with every agent it ran.
	finished bool
}

// replayBuilder reads a run's events into occurrences.
type replayBuilder struct {
	t          *Tree
	r          *Replay
	open       map[string]*occurrence // the unfinished occurrence of each agent
	transferTo map[string]*occurrence // pending transfer target -> the occurrence that handed over
	top        *occurrence
}

// NewReplay reads the stored events of one run (its own, in order) as
// run by the tree under first, the agent the run started with.
func NewReplay(t *Tree, first Agent, events []*agentrunnerv1.Event) *Replay {
	b := &replayBuilder{t: t, r: &Replay{occs: map[string][]*occurrence{}, next: map[string]int{}},
		open: map[string]*occurrence{}, transferTo: map[string]*occurrence{}}
	b.top = b.start(first.Name(), nil)
	b.r.tops = []string{first.Name()}
	for _, ev := range events {
		if ev.GetAuthor() == UserAuthor || ev.GetPartial() || IsStopMarker(ev) {
			continue
		}
		if _, ok := t.Find(ev.GetAuthor()); !ok {
			continue
		}
		b.event(ev)
	}
	b.r.finished = b.top.done && (b.top.transfer == "" || b.ranAfter(b.top.transfer))
	return b.r
}

// ranAfter reports whether agent name ran after the occurrence that
// handed over to it.
func (b *replayBuilder) ranAfter(name string) bool { return b.transferTo[name] == nil }

// Finished reports whether the run's agents had all finished: the agent
// the runner ran last had, with every agent it ran.
func (r *Replay) Finished() bool { return r != nil && r.finished }

// StartedWith returns the agent a run started with, from its own events
// (in order) alone: the author of its first agent event when the
// selection rules could have picked it (the root, an agent the next turn
// may go back to, or an agent whose calls the run's message answered,
// answering reports whether it did), else the root. Those rules pick a
// workflow agent only as the root, and an agent that stores events of its
// own stores the run's first.
func (t *Tree) StartedWith(run []*agentrunnerv1.Event, answering bool) Agent {
	for _, ev := range run {
		if ev.GetAuthor() == UserAuthor || IsStopMarker(ev) {
			continue
		}
		a, ok := t.Find(ev.GetAuthor())
		if ok && (answering || t.resumable(a)) {
			return a
		}
		break
	}
	return t.root
}

// IsStopMarker reports whether ev is the event the runner stores when it
// stops a run (CancelRun, a drain, a deadline) or finds it cut by a
// crash: it tells where the run stopped, and is no step of its agent.
// An agent's own failures end its turn (turn_complete); a stop does not.
func IsStopMarker(ev *agentrunnerv1.Event) bool {
	switch ev.GetErrorCode() {
	case "INTERRUPTED", "CANCELLED", "DEADLINE_EXCEEDED":
		return !ev.GetTurnComplete()
	}
	return false
}

func (b *replayBuilder) start(name string, parent *occurrence) *occurrence {
	o := &occurrence{name: name, parent: parent}
	b.r.occs[name] = append(b.r.occs[name], o)
	b.open[name] = o
	return o
}

// event applies one agent event of the run.
func (b *replayBuilder) event(ev *agentrunnerv1.Event) {
	name := ev.GetAuthor()
	if occs := b.r.occs[name]; b.open[name] == nil && len(occs) > 0 && !occs[len(occs)-1].after && b.hasAfter(name) {
		// What an agent's after-callbacks produce follows its end.
		occs[len(occs)-1].after = true
		return
	}
	o := b.occurrenceOf(name)
	for e := o; e != nil && !e.started; e = e.parent {
		e.started = true
	}
	if ev.GetActions().GetEscalate() {
		for e := o; e != nil; e = e.parent {
			e.escalated = true
			if e.parent != nil && b.kind(e.parent.name) == agentrunnerv1.AgentKind_AGENT_KIND_LOOP {
				break // the loop that stops reads it from its child
			}
		}
	}
	if t := ev.GetActions().GetTransferToAgent(); t != "" {
		o.transfer = t
		b.transferTo[t] = o
	}
	if Finished(ev) && ev.GetTurnComplete() {
		b.finish(o)
	}
}

// occurrenceOf returns the occurrence an event of agent name belongs to:
// its unfinished one, or a new one, started in the occurrence that ran it.
func (b *replayBuilder) occurrenceOf(name string) *occurrence {
	if o := b.open[name]; o != nil {
		return o
	}
	parent := b.parentOf(name)
	if parent != nil {
		b.enter(parent, name)
	}
	return b.start(name, parent)
}

// parentOf returns the occurrence that runs agent name: the one that
// handed over to it, its tree parent's (started when needed), or nil for
// the run's first agent and for a transfer the runner followed (which
// makes it the run's next top agent).
func (b *replayBuilder) parentOf(name string) *occurrence {
	if o := b.transferTo[name]; o != nil && !o.done {
		delete(b.transferTo, name)
		if b.under(o.name, b.top.name) || o == b.top {
			return o
		}
	}
	if name == b.top.name {
		return nil
	}
	a, _ := b.t.Find(name)
	p := b.t.Parent(a)
	if p == nil || !b.under(name, b.top.name) {
		// Outside the agent the runner ran: it followed a transfer.
		b.finish(b.top)
		b.top = &occurrence{name: name}
		b.r.tops = append(b.r.tops, name)
		return nil
	}
	return b.occurrenceOf(p.Name())
}

// enter notes that parent starts its child name: in a sequence or a loop,
// the child that ran before it has finished, and a loop whose child comes
// round again has finished a pass.
func (b *replayBuilder) enter(parent *occurrence, name string) {
	switch b.kind(parent.name) {
	case agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL, agentrunnerv1.AgentKind_AGENT_KIND_LOOP:
	default:
		return
	}
	prev := parent.active
	parent.active = name
	if prev == "" {
		return
	}
	if o := b.open[prev]; o != nil && prev != name {
		b.finish(o)
	}
	if b.kind(parent.name) == agentrunnerv1.AgentKind_AGENT_KIND_LOOP && b.index(parent.name, name) <= b.index(parent.name, prev) {
		parent.iter++
	}
}

// finish marks an occurrence finished, with whatever it still ran, and
// tells the agent that ran it.
func (b *replayBuilder) finish(o *occurrence) {
	if o.done {
		return
	}
	o.done = true
	if b.open[o.name] == o {
		delete(b.open, o.name)
	}
	for _, c := range b.open {
		if c.parent == o {
			b.finish(c)
		}
	}
	if p := o.parent; p != nil && !p.done && b.ends(p, o) {
		b.finish(p)
	}
}

// ends reports whether parent p ends once its child occurrence o ended.
func (b *replayBuilder) ends(p, o *occurrence) bool {
	if p.transfer == o.name {
		return true // a transfer's target answers for the agent that handed over
	}
	subs := b.subs(p.name)
	switch b.kind(p.name) {
	case agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL:
		return len(subs) > 0 && subs[len(subs)-1] == o.name
	case agentrunnerv1.AgentKind_AGENT_KIND_LOOP:
		if o.escalated {
			return true
		}
		a, _ := b.t.Find(p.name)
		max := loopMax(a)
		return max > 0 && len(subs) > 0 && subs[len(subs)-1] == o.name && p.iter+1 >= max
	case agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL:
		if p.finished == nil {
			p.finished = map[string]bool{}
		}
		p.finished[o.name] = true
		return len(p.finished) == len(subs)
	}
	return false
}

func (b *replayBuilder) kind(name string) agentrunnerv1.AgentKind {
	a, _ := b.t.Find(name)
	return b.t.Kind(a)
}

func (b *replayBuilder) subs(name string) []string {
	a, _ := b.t.Find(name)
	var out []string
	for _, s := range a.base().subAgents {
		out = append(out, s.Name())
	}
	return out
}

func (b *replayBuilder) index(parent, name string) int { return slices.Index(b.subs(parent), name) }

// under reports whether agent name is top or in the tree under it.
func (b *replayBuilder) under(name, top string) bool {
	a, ok := b.t.Find(name)
	for ok && a != nil {
		if a.Name() == top {
			return true
		}
		a = b.t.Parent(a)
	}
	return false
}

func (b *replayBuilder) hasAfter(name string) bool {
	a, _ := b.t.Find(name)
	return len(a.base().after) > 0
}

// loopMax is a loop agent's max_iterations (0: no bound).
func loopMax(a Agent) int {
	info := &agentrunnerv1.AgentInfo{}
	if d := a.base().describe; d != nil {
		d(info, nil)
	}
	return int(info.GetMaxIterations())
}

// Finished reports whether an event ends its agent's turn: complete, with
// no call or result to go on from and no hand-over, and saying something
// (an answer, an error) or marked turn_complete with nothing (IsEnd).
func Finished(ev *agentrunnerv1.Event) bool {
	if ev.GetPartial() || len(ev.GetLongRunningToolIds()) > 0 || ev.GetActions().GetTransferToAgent() != "" {
		return false
	}
	for _, p := range ev.GetContent().GetParts() {
		if p.GetFunctionCall() != nil || p.GetFunctionResponse() != nil {
			return false
		}
	}
	return len(ev.GetContent().GetParts()) > 0 || ev.GetErrorCode() != "" || ev.GetTurnComplete()
}

// IsEnd reports whether ev only says that its agent's turn ended: marked
// turn_complete, with no content and no error. The runner stores one when
// a custom agent returns without having marked its last event (carrying
// the state it changed after that event, if any). It is no step of the
// agent: it neither fails nor recovers from a failure.
func IsEnd(ev *agentrunnerv1.Event) bool {
	return ev.GetTurnComplete() && !ev.GetPartial() && len(ev.GetContent().GetParts()) == 0 && ev.GetErrorCode() == "" && ev.GetAuthor() != UserAuthor
}

// take hands the next start of agent name its run before the cut, nil
// when it had none (it runs as it would have).
func (r *Replay) take(name string) *occurrence {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.next[name]
	if i >= len(r.occs[name]) {
		return nil
	}
	r.next[name] = i + 1
	return r.occs[name][i]
}

// Tops returns the agents the runner itself ran before the cut, in order:
// the run's first agent, then the targets of the transfers it followed.
func (r *Replay) Tops() []string {
	if r == nil {
		return nil
	}
	return r.tops
}
