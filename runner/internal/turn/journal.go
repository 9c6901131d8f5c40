package turn

import (
	"context"
	"fmt"
	"log/slog"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/store"
)

// journal is a run's one way to the store and to its readers: every
// event of the run, whoever made it, goes the same way through it. A
// complete event is stored (the first one with the run's record, in one
// transaction), then recorded in the session view the agents read, then
// handed to the readers: nothing reaches a reader before it is durable.
// A partial event or an in-band error is handed to the readers at once,
// unstored. A final answer that ends the run may be held back to go with
// the final record (held.go); whatever comes after it, stored or
// published, stores it first, so that readers see the run in the order
// it is stored.
//
// Only the turn's goroutine uses a journal.
type journal struct {
	store journalStore
	key   store.SessionKey
	sink  Sink
	inv   *agent.Invocation // the session view
	// mayHold is the turn's rule for holding an answer back (held.go).
	mayHold func(ev *agentrunnerv1.Event) bool
	// carry is the run's record, which the next stored event carries in
	// the same transaction; nil once the record is in the store with
	// this execution's status.
	carry *agentrunnerv1.Run
	// memory is where the session is added once an event is stored, when
	// the app asks for it; nil once it is there (then the store indexes
	// every later event as it stores it), or when the app does not.
	memory memory.Service
	log    *slog.Logger
	// held is the answer held back; nil when none is.
	held *agentrunnerv1.Event
}

// journalStore is the store as the journal writes it: an event, or an
// event with its run's record in one transaction.
type journalStore interface {
	AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error)
	AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error)
}

// audience is who gets a stored event while the run goes on.
type audience uint8

const (
	everyone  audience = iota // every reader of the run
	attachers                 // the user's event its stream did not ask for (RunConfig.stream_user_event)
	nobody                    // a resumed run's answers, which attachers read from the store
)

// newJournal returns the journal of the run sink follows, in the
// session view inv.
func newJournal(env *Env, key store.SessionKey, sink Sink, inv *agent.Invocation, mayHold func(*agentrunnerv1.Event) bool) *journal {
	j := &journal{store: env.Store, key: key, sink: sink, inv: inv, mayHold: mayHold, carry: sink.Live(), log: env.Log}
	if env.AddToMemory {
		j.memory = env.Memory
	}
	return j
}

// recorded reports whether this execution stored the run's record.
func (j *journal) recorded() bool { return j.carry == nil }

// write stores a complete event and hands it to its audience, or holds
// it back when it is an answer the turn holds (then it returns ev: the
// agents see it as stored from here on, the readers once it is). It
// returns the stored event.
func (j *journal) write(ctx context.Context, ev *agentrunnerv1.Event, to audience) (*agentrunnerv1.Event, error) {
	if err := j.release(ctx); err != nil {
		return nil, err
	}
	if to == everyone && j.mayHold(ev) {
		// Its call's budget holds stay until it is stored (release, end,
		// or the turn's end at the latest), as no total counts it before.
		j.inv.HoldReleases()
		j.held = ev
		return ev, nil
	}
	return j.put(ctx, ev, to)
}

// publish hands a partial event to the readers, unstored.
func (j *journal) publish(ctx context.Context, ev *agentrunnerv1.Event) error {
	if err := j.release(ctx); err != nil {
		return err
	}
	j.sink.PublishEvent(ev)
	return nil
}

// publishErr hands an in-band error to the readers.
func (j *journal) publishErr(ctx context.Context, err error) error {
	if rerr := j.release(ctx); rerr != nil {
		return rerr
	}
	j.sink.PublishErr(err)
	return nil
}

// note adds to the session view an event another run stored: the
// answers a plain message gave the calls of the run that waited on it
// (waiting.go), which go to that run's readers, not this one's.
func (j *journal) note(stored *agentrunnerv1.Event) { j.inv.Record(nil, stored) }

// release stores the held answer, as write would have, before whatever
// comes after it; nothing when none is held.
func (j *journal) release(ctx context.Context) error {
	ev := j.held
	if ev == nil {
		return nil
	}
	j.held = nil
	if _, err := j.put(ctx, ev, everyone); err != nil {
		return fmt.Errorf("append event of agent %s: %w", ev.GetAuthor(), err)
	}
	j.inv.ReleaseHeld()
	return nil
}

// end stores the run's last events, the held answer first, then evs,
// the last of them in one transaction with the run's final record rec:
// one commit, and a crash keeps both or neither. It returns the record
// as stored, nil when there was no event to store (the caller stores
// the record alone). The held answer was never counted in the live
// record, so rec counts it.
func (j *journal) end(ctx context.Context, rec *agentrunnerv1.Run, evs ...*agentrunnerv1.Event) (*agentrunnerv1.Run, error) {
	if j.held != nil {
		runrec.AddUsage(rec, j.held) // its sequences the store sets
		evs = append([]*agentrunnerv1.Event{j.held}, evs...)
		j.held = nil
	}
	var storedRec *agentrunnerv1.Run
	for i, ev := range evs {
		if i == len(evs)-1 {
			j.carry = rec
		}
		stored, sr, err := j.append(ctx, ev)
		if err != nil {
			return nil, fmt.Errorf("append event of agent %s: %w", ev.GetAuthor(), err)
		}
		storedRec = sr
		j.inv.Record(ev.GetActions().GetStateDelta(), stored)
		j.sink.Commit(stored, false)
	}
	j.inv.ReleaseHeld()
	return storedRec, nil
}

// put stores ev, records it in the session view and hands it to its
// audience.
func (j *journal) put(ctx context.Context, ev *agentrunnerv1.Event, to audience) (*agentrunnerv1.Event, error) {
	stored, _, err := j.append(ctx, ev)
	if err != nil {
		return nil, err
	}
	// With the delta as the agent made it: the store dropped its "temp:"
	// keys, which the rest of the invocation still sees.
	j.inv.Record(ev.GetActions().GetStateDelta(), stored)
	// The stored instance stays with the runner (the session view and
	// the history cache); each reader of the run gets a copy of its own.
	switch to {
	case nobody:
		j.sink.Stored(stored)
	default:
		j.sink.Commit(stored, to == attachers)
	}
	return stored, nil
}

// append stores a complete event, with the record it carries if any,
// and returns the stored event and record (nil when it carried none).
// Then the session goes to memory, if it is to and is not there yet.
func (j *journal) append(ctx context.Context, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	var stored *agentrunnerv1.Event
	var storedRec *agentrunnerv1.Run
	var err error
	if j.carry == nil {
		stored, err = j.store.AppendEvent(ctx, j.key, ev)
	} else {
		// No copy: while the run runs, only this goroutine changes the
		// live record (the sink, under its lock, after this returns),
		// and the store does not keep what it is given.
		stored, storedRec, err = j.store.AppendRunEvent(ctx, j.key, ev, j.carry)
	}
	if err != nil {
		return nil, nil, err
	}
	j.carry = nil
	j.remember(ctx)
	return stored, storedRec, nil
}

// remember adds the session to memory after its first stored event.
// Memory is a convenience for later sessions: a failure is logged, not
// the run's, and tried again after the next event.
func (j *journal) remember(ctx context.Context) {
	if j.memory == nil {
		return
	}
	if err := j.memory.AddSession(ctx, j.key); err != nil {
		j.log.Warn("add session to memory", "session", j.key.String(), "err", err)
		return
	}
	j.memory = nil
}
