package front

import (
	"iter"
	"sync"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Limits bound what one call, one principal and the whole server may
// take. A zero field takes its default.
type Limits struct {
	// MaxPageSize is the largest page_size a listing accepts; a larger
	// one is InvalidArgument. Default and ceiling: store.MaxPageSize.
	MaxPageSize int
	// MaxEventsPerCall is how many events GetSession returns at most: the
	// most recent ones, the others counted in omitted_events (ListEvents
	// pages through them). Default DefaultMaxEventsPerCall.
	MaxEventsPerCall int
	// MaxRuns is how many runs may be in progress (pending or running) at
	// once on this server; one more is ResourceExhausted. Default
	// DefaultMaxRuns.
	MaxRuns int
	// MaxRunsPerPrincipal is how many runs one principal may have in
	// progress at once, with authentication on; one more is
	// ResourceExhausted. Default DefaultMaxRunsPerPrincipal.
	MaxRunsPerPrincipal int
	// MaxParts is how many parts one content (a run's new message, an
	// appended event's content, a resume's answers) may have; more is
	// InvalidArgument. Default DefaultMaxParts.
	MaxParts int
	// MaxInlineBytes bounds the data of one inline_data part of such a
	// content; more is InvalidArgument. Default DefaultMaxInlineBytes.
	MaxInlineBytes int
	// MaxArtifactBytes bounds the inline data of one artifact version
	// SaveArtifact stores; more is InvalidArgument. Default and ceiling:
	// what fits in one message (MaxItemBytes of the message limit).
	MaxArtifactBytes int
}

// DefaultMaxMessageBytes bounds a single request or response message. It is
// well above gRPC's 4 MiB default so that artifacts and inline blobs of a few
// megabytes fit, yet small enough that one call cannot exhaust memory.
const DefaultMaxMessageBytes = 32 << 20

// responseSlack is what a response needs besides its listed items (a
// session record's fields, a page token, framing): a page of items is
// bounded to the message limit less this.
const responseSlack = 64 << 10

// MaxItemBytes is the largest item (an event, a state, an artifact) a
// store behind a server with message limit maxMsg may keep: one that
// still fits, alone, in a response of the limit.
func MaxItemBytes(maxMsg int) int {
	if maxMsg <= 0 {
		maxMsg = DefaultMaxMessageBytes
	}
	return maxMsg - responseSlack
}

// Defaults of Limits.
const (
	DefaultMaxEventsPerCall    = 10000
	DefaultMaxRuns             = 1000
	DefaultMaxRunsPerPrincipal = 100
	DefaultMaxParts            = 1000
	DefaultMaxInlineBytes      = 20 << 20
)

func (l Limits) withDefaults(maxMsg int) Limits {
	if l.MaxPageSize <= 0 || l.MaxPageSize > store.MaxPageSize {
		l.MaxPageSize = store.MaxPageSize
	}
	if l.MaxEventsPerCall <= 0 {
		l.MaxEventsPerCall = DefaultMaxEventsPerCall
	}
	if l.MaxRuns <= 0 {
		l.MaxRuns = DefaultMaxRuns
	}
	if l.MaxRunsPerPrincipal <= 0 {
		l.MaxRunsPerPrincipal = DefaultMaxRunsPerPrincipal
	}
	if l.MaxParts <= 0 {
		l.MaxParts = DefaultMaxParts
	}
	if l.MaxInlineBytes <= 0 {
		l.MaxInlineBytes = DefaultMaxInlineBytes
	}
	// An artifact version must fit, alone, in the response that loads it.
	if ceiling := MaxItemBytes(maxMsg); l.MaxArtifactBytes <= 0 || l.MaxArtifactBytes > ceiling {
		l.MaxArtifactBytes = ceiling
	}
	return l
}

// runSlot is one run counted by runLimiter: reserved when admitted, bound
// to the run's done channel once its id is known, gone once that closes.
type runSlot struct {
	principal string
	done      <-chan struct{}
}

// runLimiter counts the runs in progress, in total and per principal. It
// starts no goroutines: slots whose runs have ended are swept only when a
// limit seems reached or the slots have doubled since the last sweep, so
// that an admission costs O(1) and the map stays bounded.
type runLimiter struct {
	max, maxPer int
	mu          sync.Mutex
	slots       map[*runSlot]struct{}
	// per counts the slots of each principal, swept or not; sweepAt is
	// the size of slots at which the next admission sweeps anyway.
	per     map[string]int
	sweepAt int
}

// minSweep is the fewest slots at which an admission sweeps ended runs.
const minSweep = 1024

func newRunLimiter(l Limits) *runLimiter {
	return &runLimiter{max: l.MaxRuns, maxPer: l.MaxRunsPerPrincipal, slots: map[*runSlot]struct{}{}, per: map[string]int{}, sweepAt: minSweep}
}

// acquire reserves a slot for a run of principal ("" without
// authentication, which only the total bounds), or says why not.
func (l *runLimiter) acquire(principal string) (*runSlot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	over := func() bool {
		return len(l.slots) >= l.max || (principal != "" && l.per[principal] >= l.maxPer)
	}
	if over() || len(l.slots) >= l.sweepAt {
		l.sweepLocked()
	}
	switch {
	case len(l.slots) >= l.max:
		return nil, status.Errorf(codes.ResourceExhausted, "%d runs are in progress on this server, its limit; try again later", len(l.slots))
	case principal != "" && l.per[principal] >= l.maxPer:
		return nil, status.Errorf(codes.ResourceExhausted, "principal %s has %d runs in progress, its limit; try again once one ends", principal, l.per[principal])
	}
	sl := &runSlot{principal: principal}
	l.slots[sl] = struct{}{}
	l.per[principal]++
	return sl, nil
}

// reserve counts a slot in the total whatever the limits (see
// claimGate.Reserve).
func (l *runLimiter) reserve() *runSlot {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := &runSlot{}
	l.slots[sl] = struct{}{}
	l.per[sl.principal]++
	return sl
}

// sweepLocked drops the slots whose runs have ended.
func (l *runLimiter) sweepLocked() {
	for sl := range l.slots {
		if sl.done != nil && isClosed(sl.done) {
			l.dropLocked(sl)
		}
	}
	l.sweepAt = max(minSweep, 2*len(l.slots))
}

func (l *runLimiter) dropLocked(sl *runSlot) {
	if _, ok := l.slots[sl]; !ok {
		return
	}
	delete(l.slots, sl)
	if l.per[sl.principal]--; l.per[sl.principal] <= 0 {
		delete(l.per, sl.principal)
	}
}

// bind ties a slot to its run: it is counted until done closes.
func (l *runLimiter) bind(sl *runSlot, done <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl.done = done
}

// release drops a slot whose run never started.
func (l *runLimiter) release(sl *runSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropLocked(sl)
}

// inProgress is how many runs are counted (those ended dropped).
func (l *runLimiter) inProgress() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweepLocked()
	return len(l.slots)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// tracked passes a run stream through, binding sl to the run once the
// stream names it (its first message is the run record) and releasing it
// when the stream ends without naming one.
func (l *runLimiter) tracked(sl *runSlot, runDone func(runID string) <-chan struct{}, seq iter.Seq2[runner.Update, error]) iter.Seq2[runner.Update, error] {
	return func(yield func(runner.Update, error) bool) {
		bound := false
		defer func() {
			if !bound {
				l.release(sl)
			}
		}()
		for u, err := range seq {
			if !bound && u.Run != nil && err == nil {
				l.bind(sl, runDone(u.Run.GetRunId()))
				bound = true
			}
			if !yield(u, err) {
				return
			}
		}
	}
}

type claimGate struct{ l *runLimiter }

// TryClaim reserves a slot counted in the total only: the principal that
// started the run was counted where it was admitted.
func (g claimGate) TryClaim() (runner.Claim, bool) {
	sl, err := g.l.acquire("")
	if err != nil {
		return nil, false
	}
	return claimedSlot{l: g.l, sl: sl}, true
}

// Reserve counts a recovered run beside the others, over the limit if
// it must be: the run was admitted before a restart.
func (g claimGate) Reserve() runner.Claim {
	return claimedSlot{l: g.l, sl: g.l.reserve()}
}

type claimedSlot struct {
	l  *runLimiter
	sl *runSlot
}

func (c claimedSlot) Bind(done <-chan struct{}) { c.l.bind(c.sl, done) }

func (c claimedSlot) Release() { c.l.release(c.sl) }

// paged is every listing request.
type paged interface {
	GetPageSize() int32
	GetPageToken() string
}

// page is the store page of a listing request, bounded by bytes so that
// the response fits in a message of the limit maxMsg.
func page(r paged, maxMsg int) store.Page {
	return store.Page{Size: int(r.GetPageSize()), Token: r.GetPageToken(), MaxBytes: maxMsg - responseSlack}
}
