package schedule

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Defaults of Config.
const (
	// DefaultTick is how often the scheduler looks for due times: a
	// time fires within a tick of it.
	DefaultTick = 200 * time.Millisecond
	// DefaultCatchUp is how late a time may be seen and still fire as
	// due; a time seen later than that was missed, and the schedule's
	// MissedPolicy decides.
	DefaultCatchUp = 10 * time.Second
	// maxDuePerStep bounds the due times one step fires per schedule.
	maxDuePerStep = 100
	// recoverEvery is how often, in ticks, claimed times that recorded no
	// outcome are looked for.
	recoverEvery = 25
)

// FireFunc starts the run of schedule sc for its time at and returns the
// run's id, or the error that refused it. It must be idempotent for a
// given (sc, at): the scheduler calls it again for a claimed time whose
// outcome was never recorded (its replica died in between). RunIDs
// names the session and request id that make it so.
type FireFunc func(ctx context.Context, sc *agentrunnerv1.Schedule, at time.Time) (runID string, err error)

// Config configures a Scheduler.
type Config struct {
	Store store.ScheduleStore
	// Schedules returns every schedule to fire: the apps file's and the
	// store's.
	Schedules func(ctx context.Context) ([]*agentrunnerv1.Schedule, error)
	Fire      FireFunc
	// Holder names this replica in its claims.
	Holder string
	// Now is the clock; nil is time.Now.
	Now     func() time.Time
	Tick    time.Duration
	CatchUp time.Duration
	Logger  *slog.Logger
}

// Scheduler fires the times of schedules. Every replica sharing a store
// runs one; each time is fired by the replica that claims it first
// (store.ScheduleStore.ClaimFire).
type Scheduler struct {
	cfg   Config
	mu    sync.Mutex
	specs map[string]*Spec // by cron + "\x00" + zone
	ticks int
	// cursors are the schedules' cursors as last read or moved here: a
	// lower bound of the stored ones (a cursor only moves forward), so a
	// schedule whose next time after it is not due yet costs the store
	// nothing.
	cursors map[string]time.Time
	// failing holds each schedule's last error ("" key: the listing's),
	// so that an error that lasts (the store down) is logged once, not
	// every tick.
	failing map[string]string
}

// New returns a Scheduler; Run starts it.
func New(cfg Config) *Scheduler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.CatchUp <= 0 {
		cfg.CatchUp = DefaultCatchUp
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scheduler{cfg: cfg, specs: map[string]*Spec{}, cursors: map[string]time.Time{}, failing: map[string]string{}}
}

// Run steps every tick until ctx is done.
func (s *Scheduler) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		_ = s.safeStep(ctx) // logged there
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// safeStep is Step for the loop that serve runs in a goroutine of its
// own, where a panic (a bug, a record no check foresaw) would stop the
// whole server: it is logged with its stack and the next tick goes on.
func (s *Scheduler) safeStep(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("scheduler step panicked: %v", v)
			s.cfg.Logger.Error("scheduler step panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	return s.Step(ctx)
}

// Step fires, once, what is due now of every schedule: the times passed
// since its cursor, the missed ones by its policy. A schedule's error is
// logged (when it differs from its last) and the others go on; the first
// is returned.
func (s *Scheduler) Step(ctx context.Context) error {
	scheds, err := s.cfg.Schedules(ctx)
	s.note(ctx, "", err)
	if err != nil {
		return fmt.Errorf("list schedules: %w", err)
	}
	s.mu.Lock()
	s.ticks++
	doRecover := s.ticks%recoverEvery == 1
	listed := make(map[string]bool, len(scheds))
	for _, sc := range scheds {
		listed[sc.GetScheduleId()] = true
	}
	for id := range s.cursors { // forget the schedules deleted
		if !listed[id] {
			delete(s.cursors, id)
			delete(s.failing, id)
		}
	}
	s.mu.Unlock()
	var first error
	for _, sc := range scheds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		err := s.step(ctx, sc, doRecover)
		s.note(ctx, sc.GetScheduleId(), err)
		first = cmp.Or(first, err)
	}
	return first
}

// note logs schedule id's error when it is new, and its recovery.
func (s *Scheduler) note(ctx context.Context, id string, err error) {
	if ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	last, had := s.failing[id]
	switch {
	case err != nil:
		s.failing[id] = err.Error()
	case had:
		delete(s.failing, id)
	}
	s.mu.Unlock()
	switch {
	case err != nil && err.Error() != last:
		s.cfg.Logger.Warn("schedule failing", "schedule", id, "err", err)
	case err == nil && had:
		s.cfg.Logger.Info("schedule works again", "schedule", id)
	}
}

// spec parses sc's cron, once per expression and zone.
func (s *Scheduler) spec(sc *agentrunnerv1.Schedule) (*Spec, error) {
	key := sc.GetCron() + "\x00" + sc.GetTimeZone()
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp, ok := s.specs[key]; ok {
		return sp, nil
	}
	sp, err := Parse(sc.GetCron(), sc.GetTimeZone())
	if err != nil {
		return nil, err
	}
	s.specs[key] = sp
	return sp, nil
}

func (s *Scheduler) step(ctx context.Context, sc *agentrunnerv1.Schedule, doRecover bool) error {
	if sc.GetPaused() {
		// Its cursor stays: when resumed, the times passed meanwhile
		// are missed ones, which its policy decides.
		return nil
	}
	sp, err := s.spec(sc)
	if err != nil {
		return err
	}
	id, now := sc.GetScheduleId(), s.cfg.Now()
	if doRecover {
		s.recoverFires(ctx, sc, now)
	}
	s.mu.Lock()
	known, ok := s.cursors[id]
	s.mu.Unlock()
	if next := sp.Next(known); ok && (next.IsZero() || next.After(now)) {
		return nil
	}
	cursor, err := s.cursor(ctx, id, now)
	if err != nil {
		return err
	}
	defer func() { s.remember(id, cursor) }()
	next := sp.Next(cursor)
	if next.IsZero() || next.After(now) {
		return nil
	}
	if edge := now.Add(-s.cfg.CatchUp); !next.After(edge) {
		if cursor, err = s.missed(ctx, sc, sp, cursor, edge); err != nil {
			return err
		}
	}
	for range maxDuePerStep {
		at := sp.Next(cursor)
		if at.IsZero() || at.After(now) {
			return nil
		}
		if err := s.claimAndFire(ctx, sc, at); err != nil {
			return err
		}
		cursor = at
	}
	return nil
}

// cursor reads schedule id's cursor from the store, starting it at now
// when the schedule has none (its first sight).
func (s *Scheduler) cursor(ctx context.Context, id string, now time.Time) (time.Time, error) {
	st, err := s.cfg.Store.ScheduleState(ctx, id)
	if err == nil {
		return st.Cursor, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return time.Time{}, fmt.Errorf("cursor: %w", err)
	}
	c, err := s.cfg.Store.StartSchedule(ctx, id, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("start cursor: %w", err)
	}
	return c, nil
}

// remember keeps cursor as schedule id's known cursor.
func (s *Scheduler) remember(id string, cursor time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cursor.After(s.cursors[id]) {
		s.cursors[id] = cursor
	}
}

// missed applies sc's policy to its times in (cursor, edge], which were
// seen too late to fire as due, and returns the cursor after them.
func (s *Scheduler) missed(ctx context.Context, sc *agentrunnerv1.Schedule, sp *Spec, cursor, edge time.Time) (time.Time, error) {
	last := latestBy(sp, cursor, edge)
	if sc.GetMissedPolicy() == agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE {
		s.cfg.Logger.Info("schedule missed times: firing the latest once", "schedule", sc.GetScheduleId(), "from", sp.Next(cursor), "to", last)
		return last, s.claimAndFire(ctx, sc, last)
	}
	s.cfg.Logger.Info("schedule missed times: skipped", "schedule", sc.GetScheduleId(), "from", sp.Next(cursor), "to", last)
	if err := s.cfg.Store.SkipTo(ctx, sc.GetScheduleId(), last); err != nil {
		return cursor, fmt.Errorf("skip missed times: %w", err)
	}
	return last, nil
}

// latestBy returns the last time of sp after cursor and at or before
// edge, which the caller knows exists. It looks back from edge over
// doubling spans, so that a long downtime costs the times of about one
// span, not every time missed.
func latestBy(sp *Spec, cursor, edge time.Time) time.Time {
	for span := time.Second; ; span *= 2 {
		from := edge.Add(-span)
		if !from.After(cursor) {
			from = cursor
		}
		last := time.Time{}
		for at := sp.Next(from); !at.IsZero() && !at.After(edge); at = sp.Next(at) {
			last = at
		}
		if !last.IsZero() || !from.After(cursor) {
			return last
		}
	}
}

// claimAndFire claims time at of sc and, when this replica got it,
// fires it and records the outcome. A time another replica claimed is
// no error.
func (s *Scheduler) claimAndFire(ctx context.Context, sc *agentrunnerv1.Schedule, at time.Time) error {
	err := s.cfg.Store.ClaimFire(ctx, sc.GetScheduleId(), at, s.cfg.Holder)
	if errors.Is(err, store.ErrAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", at, err)
	}
	return s.fire(ctx, sc, at)
}

// fire runs a claimed time and records what it started. A refused run
// is recorded, not retried: the time is decided.
func (s *Scheduler) fire(ctx context.Context, sc *agentrunnerv1.Schedule, at time.Time) error {
	runID, ferr := s.cfg.Fire(ctx, sc, at)
	errText := ""
	if ferr != nil {
		if ctx.Err() != nil {
			// Shutting down: the claim stays open, and recovery fires it.
			return ctx.Err()
		}
		errText = ferr.Error()
		s.cfg.Logger.Warn("scheduled run refused", "schedule", sc.GetScheduleId(), "time", at, "err", ferr)
	}
	if err := s.cfg.Store.FinishFire(context.WithoutCancel(ctx), sc.GetScheduleId(), at, runID, errText); err != nil {
		return fmt.Errorf("record the firing of %s: %w", at, err)
	}
	return nil
}

// recoverFires fires again the claimed times of sc that recorded no
// outcome and were claimed more than a catch-up window ago: the replica
// that claimed them stopped between the claim and the record. FireFunc
// is idempotent, so a time whose run did start gets that run again.
func (s *Scheduler) recoverFires(ctx context.Context, sc *agentrunnerv1.Schedule, now time.Time) {
	fires, err := s.cfg.Store.ListFires(ctx, sc.GetScheduleId(), 10)
	if err != nil {
		s.cfg.Logger.Warn("schedule: list claims", "schedule", sc.GetScheduleId(), "err", err)
		return
	}
	for _, f := range fires {
		if f.Finished || now.Sub(f.Time) < 3*s.cfg.CatchUp {
			continue
		}
		s.cfg.Logger.Info("schedule: firing a claimed time that recorded no outcome", "schedule", sc.GetScheduleId(), "time", f.Time, "claimed_by", f.Holder)
		if err := s.fire(ctx, sc, f.Time); err != nil {
			s.cfg.Logger.Warn("schedule: recover a claim", "schedule", sc.GetScheduleId(), "err", err)
		}
	}
}

// RunIDs returns the session (for a schedule without a fixed one) and
// the request id of the run of sc's time at: the same on every replica
// and every attempt, so that firing a time again finds its run.
func RunIDs(sc *agentrunnerv1.Schedule, at time.Time) (sessionID, requestID string) {
	secs := strconv.FormatInt(at.Unix(), 10)
	sessionID = sc.GetSessionId()
	if sessionID == "" {
		h := sha256.Sum256([]byte(sc.GetScheduleId()))
		sessionID = "sched-" + hex.EncodeToString(h[:6]) + "-" + secs
	}
	return sessionID, "schedule:" + sc.GetScheduleId() + ":" + secs
}

// NextTime returns sc's next time after now (zero when it has none or
// its cron does not parse), for listings.
func NextTime(sc *agentrunnerv1.Schedule, now time.Time) time.Time {
	sp, err := Parse(sc.GetCron(), sc.GetTimeZone())
	if err != nil {
		return time.Time{}
	}
	return sp.Next(now)
}
