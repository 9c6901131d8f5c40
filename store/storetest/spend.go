package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// OpenAt returns a new, empty store whose clock (its Options.Now) is
// now; the suite closes it.
type OpenAt func(t *testing.T, now func() time.Time) store.Store

// Clock is a store's clock in the spend tests, which the ledger's days
// come from: set by the test before each write.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Set sets the time Now returns.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Now returns the time last Set.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// RunSpend runs the ledger's conformance tests that need the store's
// clock against stores made by open.
func RunSpend(t *testing.T, open OpenAt) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, clock *Clock)
	}{
		{"SpendSums", testSpendSums},
		{"SpendConcurrent", testSpendConcurrent},
		{"SpendOnlyRunner", testSpendOnlyRunner},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &Clock{now: spendDays[0]}
			s := open(t, clock.Now)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s, clock)
		})
	}
}

// testSpendOnlyRunner (issue 46): an event a client appends
// (AppendEventOnce, with an id or without) is stored as given, usage and
// cost included, but counts toward no total: 2·10⁹ tokens dated
// tomorrow, negative counts, a model name of its own change neither the
// session's totals nor the ledger. The runner's appends count on the
// store's day, whatever their timestamp, and a negative count of theirs
// takes nothing off.
func testSpendOnlyRunner(t *testing.T, s store.Store, clock *Clock) {
	ctx := t.Context()
	k := key("app", "mallory", "s")
	create(t, s, k, nil)
	clock.Set(spendDays[0].Add(10 * time.Hour))
	huge := SpendCall(0, spendDays[1].Add(time.Hour), "made-up-model", false)
	huge.UsageMetadata = &agentrunnerv1.UsageMetadata{PromptTokenCount: 2_000_000_000, TotalTokenCount: 2_000_000_000}
	negative := SpendCall(1, spendDays[0], "flash", false)
	negative.UsageMetadata = &agentrunnerv1.UsageMetadata{PromptTokenCount: -1_000_000, TotalTokenCount: -1_000_000}
	negative.Cost.Micros = -5_000_000
	negative.Id = "client-1"
	for _, ev := range []*agentrunnerv1.Event{huge, negative} {
		stored, _, err := s.AppendEventOnce(ctx, k, ev)
		if err != nil {
			t.Fatalf("AppendEventOnce: %v", err)
		}
		if !proto.Equal(stored.GetUsageMetadata(), ev.GetUsageMetadata()) || !proto.Equal(stored.GetCost(), ev.GetCost()) {
			t.Fatalf("stored usage %v cost %v, want them as given: %v %v", stored.GetUsageMetadata(), stored.GetCost(), ev.GetUsageMetadata(), ev.GetCost())
		}
	}
	sess, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 2 || sess.GetUsage() != nil || sess.GetCost() != nil || sess.GetTotalTokens() != 0 {
		t.Fatalf("after a client's appends: %d events, session usage %v cost %v total %d; want 2 events and no totals", len(evs), sess.GetUsage(), sess.GetCost(), sess.GetTotalTokens())
	}
	checkLedger(t, s, spendLedger{}, "mallory")
	// The runner's: a call dated the day after counts today, a negative
	// one adds nothing, and totals pass 32 bits.
	ledger := spendLedger{}
	var want int64
	for i := range 3 {
		ev := SpendCall(i, spendDays[1].Add(time.Hour), "flash", false)
		ev.UsageMetadata.TotalTokenCount = 2_000_000_000
		appendEv(t, s, k, ev)
		ev.Timestamp = timestamppb.New(clock.Now())
		ledger.add("mallory", ev)
		want += 2_000_000_000
	}
	neg := negative.CloneVT()
	neg.Id = ""
	appendEv(t, s, k, neg)
	ledger.add("mallory", &agentrunnerv1.Event{Timestamp: timestamppb.New(clock.Now()), UsageMetadata: &agentrunnerv1.UsageMetadata{},
		Cost: &agentrunnerv1.Cost{Currency: "USD", Model: "flash"}})
	checkLedger(t, s, ledger, "mallory")
	sess, _ = get(t, s, k, store.GetOptions{})
	if sess.GetTotalTokens() != want || sess.GetCost().GetMicros() < 0 || sess.GetUsage().GetPromptTokenCount() < 0 {
		t.Fatalf("session totals after the runner's calls: tokens %d (want %d), usage %v, cost %v", sess.GetTotalTokens(), want, sess.GetUsage(), sess.GetCost())
	}
}

// SpendCall is a model call's event of number i (which varies its token
// counts and cost) at ts: with usage, served by model (the provider's
// model version), and priced in USD by the models entry of that name
// unless unpriced. Stores' own tests use it with SpendTally.
func SpendCall(i int, ts time.Time, model string, unpriced bool) *agentrunnerv1.Event {
	ev := textEvent("agent", fmt.Sprint("answer ", i), nil)
	ev.Timestamp = timestamppb.New(ts)
	ev.ModelVersion = model
	n := int32(i + 1)
	ev.UsageMetadata = &agentrunnerv1.UsageMetadata{
		PromptTokenCount: 100 * n, CandidatesTokenCount: 10 * n, ThoughtsTokenCount: 3 * n, CachedContentTokenCount: 7 * n,
		ToolUsePromptTokenCount: n, TotalTokenCount: 121 * n, CacheCreationTokenCount: 5 * n,
		PromptTokensDetails: []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 100 * n}},
	}
	if !unpriced {
		ev.Cost = &agentrunnerv1.Cost{Currency: "USD", Micros: 1_000_003 * int64(n), Model: model}
	}
	return ev
}

// SpendTally sums model calls by plain arithmetic, apart from the store
// package's helpers, for the tests to compare the stores' sums with.
type SpendTally struct {
	prompt, candidates, thoughts, cached, toolUse, total, cacheCreation int64
	micros, unpriced, calls                                             int64
	currency                                                            string
}

// Add counts ev: nothing without usage, an unpriced call without cost.
func (t *SpendTally) Add(ev *agentrunnerv1.Event) {
	u := ev.GetUsageMetadata()
	if u == nil {
		return
	}
	t.prompt += int64(u.GetPromptTokenCount())
	t.candidates += int64(u.GetCandidatesTokenCount())
	t.thoughts += int64(u.GetThoughtsTokenCount())
	t.cached += int64(u.GetCachedContentTokenCount())
	t.toolUse += int64(u.GetToolUsePromptTokenCount())
	t.total += int64(u.GetTotalTokenCount())
	t.cacheCreation += int64(u.GetCacheCreationTokenCount())
	t.calls++
	if c := ev.GetCost(); c == nil {
		t.unpriced++
	} else {
		t.micros += c.GetMicros()
		t.unpriced += c.GetUnpricedCalls()
		if t.currency == "" {
			t.currency = c.GetCurrency()
		}
	}
}

// Cost is the sum's cost as a session's or run's cost field holds it: nil
// without calls.
func (t *SpendTally) Cost() *agentrunnerv1.Cost {
	if t.calls == 0 {
		return nil
	}
	return &agentrunnerv1.Cost{Currency: t.currency, Micros: t.micros, UnpricedCalls: t.unpriced}
}

// Spend is the sum as the ledger returns it: a zero Spend without calls.
func (t *SpendTally) Spend() *agentrunnerv1.Spend {
	if t.calls == 0 {
		return &agentrunnerv1.Spend{}
	}
	return &agentrunnerv1.Spend{
		Usage: &agentrunnerv1.UsageMetadata{
			PromptTokenCount: int32(t.prompt), CandidatesTokenCount: int32(t.candidates), ThoughtsTokenCount: int32(t.thoughts),
			CachedContentTokenCount: int32(t.cached), ToolUsePromptTokenCount: int32(t.toolUse), TotalTokenCount: int32(t.total),
			CacheCreationTokenCount: int32(t.cacheCreation),
		},
		Cost:        t.Cost(),
		ModelCalls:  t.calls,
		TotalTokens: t.total,
	}
}

// WantSpend fails t unless got equals want.
func WantSpend(t testing.TB, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("%s = {%v}, want {%v}", what, got, want)
	}
}

// spendDays are the two UTC days of the spend tests.
var spendDays = [2]time.Time{
	time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
}

// spendLedger is what the spend tests expect of the ledger, by day and
// model: of each user, and of all users ("").
type spendLedger map[string]map[[2]string]*SpendTally

func (l spendLedger) add(user string, ev *agentrunnerv1.Event) {
	if ev.GetUsageMetadata() == nil {
		return
	}
	key := [2]string{store.Day(ev.GetTimestamp().AsTime()), store.SpendModel(ev)}
	for _, u := range []string{user, ""} {
		if l[u] == nil {
			l[u] = map[[2]string]*SpendTally{}
		}
		if l[u][key] == nil {
			l[u][key] = &SpendTally{}
		}
		l[u][key].Add(ev)
	}
}

// day sums user's tallies of day over models.
func (l spendLedger) day(user string, day time.Time) *agentrunnerv1.Spend {
	var sum SpendTally
	for key, t := range l[user] {
		if key[0] == store.Day(day) {
			sum.merge(t)
		}
	}
	return sum.Spend()
}

func (t *SpendTally) merge(o *SpendTally) {
	t.prompt += o.prompt
	t.candidates += o.candidates
	t.thoughts += o.thoughts
	t.cached += o.cached
	t.toolUse += o.toolUse
	t.total += o.total
	t.cacheCreation += o.cacheCreation
	t.micros += o.micros
	t.unpriced += o.unpriced
	t.calls += o.calls
	if t.currency == "" {
		t.currency = o.currency
	}
}

// spendAppend appends ev to k the way i selects, so that every append
// path of a store counts it: AppendEvent (no state change; a session
// state change; a user state change, which some stores append apart),
// AppendEventOnce (and its retry, which must count nothing), and
// AppendRunEvent with run, whose cost the caller keeps (as the runner
// keeps its usage) and the store writes as given. It returns the stored
// run when it wrote one.
func spendAppend(t *testing.T, s store.Store, k store.SessionKey, i int, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) *agentrunnerv1.Run {
	t.Helper()
	ctx := t.Context()
	switch i % 5 {
	case 0:
		appendEv(t, s, k, ev)
	case 1:
		ev.Actions = &agentrunnerv1.EventActions{StateDelta: mustStruct(t, map[string]any{"n": float64(i)})}
		appendEv(t, s, k, ev)
	case 2:
		ev.Actions = &agentrunnerv1.EventActions{StateDelta: mustStruct(t, map[string]any{"user:n": float64(i)})}
		appendEv(t, s, k, ev)
	case 3:
		ev.Id = fmt.Sprint("call-", i)
		for try := range 2 {
			if _, existed, err := s.AppendEventOnce(ctx, k, ev); err != nil || existed != (try == 1) {
				t.Fatalf("AppendEventOnce try %d: existed %v, %v", try, existed, err)
			}
		}
	default:
		_, stored := appendRun(t, s, k, ev, run)
		return stored
	}
	return nil
}

// testSpendSums: model calls of two users' sessions on two UTC days and
// three models (one the "unknown" of a call without model), appended by
// every path, some unpriced, one event with cost but no usage: the
// sessions' and runs' costs, DailySpend and ListSpend are the exact sums,
// and deleting a session leaves the ledger as it was.
func testSpendSums(t *testing.T, s store.Store, clock *Clock) {
	ctx := t.Context()
	keys := []store.SessionKey{key("app", "alice", "sa"), key("app", "bob", "sb")}
	other := key("other-app", "alice", "sa") // a second app's calls, counted apart
	for _, k := range append(keys, other) {
		create(t, s, k, nil)
	}
	ledger := spendLedger{}
	sessions := map[store.SessionKey]*SpendTally{}
	runs := map[store.SessionKey]*agentrunnerv1.Run{}
	runCost := map[store.SessionKey]*SpendTally{}
	for n, k := range keys {
		sessions[k], runCost[k] = &SpendTally{}, &SpendTally{}
		runs[k] = runRec(k, fmt.Sprint("run-", n), n, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	}
	for i := range 20 {
		k := keys[i%2]
		// Day 1 in UTC, though written in a zone east of it where it is
		// day 2 already, then day 2 from its first instant.
		ts := spendDays[1].Add(-time.Hour).In(time.FixedZone("UTC+3", 3*3600)).Add(time.Duration(i) * time.Second)
		if i >= 10 {
			ts = spendDays[1].Add(time.Duration(i-10) * time.Minute)
		}
		ev := SpendCall(i, ts, []string{"flash", "pro"}[min(i%3, 1)], i%4 == 3)
		switch i {
		case 7:
			ev.UsageMetadata = nil // a cost without usage is no call
		case 12:
			ev.ModelVersion, ev.Cost = "", nil // no model: counted as "unknown"
		}
		clock.Set(ts) // the ledger's day is the store's clock at the write
		if i%5 != 3 { // AppendEventOnce, the client's append, counts nothing
			ledger.add(k.User, ev)
			sessions[k].Add(ev)
		}
		if i%5 == 4 {
			runCost[k].Add(ev)
			runs[k].Cost = runCost[k].Cost()
		}
		if stored := spendAppend(t, s, k, i, ev, runs[k]); stored != nil {
			WantSpend(t, "AppendRunEvent's run cost", stored.GetCost(), runCost[k].Cost())
		}
	}
	clock.Set(spendDays[0])
	appendEv(t, s, other, SpendCall(99, spendDays[0], "flash", false))
	for _, k := range keys {
		sess, _ := get(t, s, k, store.GetOptions{})
		WantSpend(t, fmt.Sprintf("session %s cost", k), sess.GetCost(), sessions[k].Cost())
		WantSpend(t, fmt.Sprintf("run of %s cost", k), getRun(t, s, runs[k].GetRunId()).GetCost(), runCost[k].Cost())
	}
	checkLedger(t, s, ledger, "alice", "bob")
	if ledger["alice"][[2]string{"2026-11-26", "unknown"}] == nil {
		t.Fatal("storetest: no call without a model was made") // the test's own check
	}
	if err := s.DeleteSession(ctx, keys[1]); err != nil {
		t.Fatal(err)
	}
	checkLedger(t, s, ledger, "alice", "bob")
}

// checkLedger checks DailySpend and ListSpend of app "app" against ledger.
func checkLedger(t *testing.T, s store.Store, ledger spendLedger, users ...string) {
	t.Helper()
	ctx := t.Context()
	for _, day := range append(spendDays[:], spendDays[1].AddDate(0, 0, 1)) {
		for _, u := range append(users, "carol") { // carol never called
			// Any instant of the day names it.
			us, as, err := s.DailySpend(ctx, "app", u, day.Add(23*time.Hour+59*time.Minute))
			if err != nil {
				t.Fatalf("DailySpend(%s, %s): %v", u, store.Day(day), err)
			}
			WantSpend(t, fmt.Sprintf("DailySpend of %s on %s", u, store.Day(day)), us, ledger.day(u, day))
			WantSpend(t, fmt.Sprintf("DailySpend of the app on %s", store.Day(day)), as, ledger.day("", day))
		}
	}
	for _, u := range append(users, "", "carol") {
		checkList(t, s, ledger, u, spendDays[0], spendDays[1])
		checkList(t, s, ledger, u, spendDays[1], spendDays[1].AddDate(0, 0, 5))
		checkList(t, s, ledger, u, spendDays[0].AddDate(0, 0, -3), spendDays[0])
		checkList(t, s, ledger, u, spendDays[1], spendDays[0]) // an empty range
	}
}

// checkList checks ListSpend of user (or all users) from from to to.
func checkList(t *testing.T, s store.Store, ledger spendLedger, user string, from, to time.Time) {
	t.Helper()
	got, err := s.ListSpend(t.Context(), "app", user, from, to)
	if err != nil {
		t.Fatalf("ListSpend(%q): %v", user, err)
	}
	var want []store.DaySpend
	for _, day := range spendDays {
		if day.Before(from) || day.After(to) {
			continue
		}
		for _, model := range []string{"flash", "pro", "unknown"} { // by name
			if tl := ledger[user][[2]string{store.Day(day), model}]; tl != nil {
				want = append(want, store.DaySpend{Day: store.Day(day), Model: model, Spend: tl.Spend()})
			}
		}
	}
	what := fmt.Sprintf("ListSpend(%q, %s..%s)", user, store.Day(from), store.Day(to))
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d: %v", what, len(got), len(want), got)
	}
	for i := range want {
		if got[i].Day != want[i].Day || got[i].Model != want[i].Model {
			t.Fatalf("%s entry %d is %s %s, want %s %s", what, i, got[i].Day, got[i].Model, want[i].Day, want[i].Model)
		}
		WantSpend(t, fmt.Sprintf("%s entry %d", what, i), got[i].Spend, want[i].Spend)
	}
}

// testSpendConcurrent: one user's sessions append model calls at once,
// by AppendEvent and AppendRunEvent: the user's and the app's daily
// totals and every session's cost are exact.
func testSpendConcurrent(t *testing.T, s store.Store, clock *Clock) {
	clock.Set(spendDays[0].Add(time.Hour))
	const sessions, calls = 8, 12
	ledger := spendLedger{}
	tallies := make([]SpendTally, sessions)
	evs := make([][]*agentrunnerv1.Event, sessions)
	for i := range sessions {
		create(t, s, key("app", "u", fmt.Sprint("c", i)), nil)
		for j := range calls {
			ev := SpendCall(i*calls+j, spendDays[0].Add(time.Duration(j)*time.Minute), []string{"flash", "pro"}[j%2], j%5 == 0)
			evs[i] = append(evs[i], ev)
			ledger.add("u", ev)
			tallies[i].Add(ev)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- appendCalls(t, s, key("app", "u", fmt.Sprint("c", i)), evs[i])
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		sess, _ := get(t, s, key("app", "u", fmt.Sprint("c", i)), store.GetOptions{})
		WantSpend(t, fmt.Sprint("session c", i, " cost"), sess.GetCost(), tallies[i].Cost())
	}
	checkLedger(t, s, ledger, "u")
}

// appendCalls appends evs to k, every other one with a run record.
func appendCalls(t *testing.T, s store.Store, k store.SessionKey, evs []*agentrunnerv1.Event) error {
	run := runRec(k, "run-"+k.Session, 0, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING)
	for j, ev := range evs {
		var err error
		if j%2 == 0 {
			_, err = s.AppendEvent(t.Context(), k, ev)
		} else {
			_, _, err = s.AppendRunEvent(t.Context(), k, ev, run)
		}
		if err != nil {
			return fmt.Errorf("append %d to %s: %w", j, k, err)
		}
	}
	return nil
}

// testSpendInvalid: reads of the ledger need an app, DailySpend a user
// too; a store's limits on key parts apply.
func testSpendInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	day := spendDays[0]
	for name, call := range map[string]func() error{
		"DailySpend without app":  func() error { _, _, err := s.DailySpend(ctx, "", "u", day); return err },
		"DailySpend without user": func() error { _, _, err := s.DailySpend(ctx, "app", "", day); return err },
		"ListSpend without app":   func() error { _, err := s.ListSpend(ctx, "", "u", day, day); return err },
		"ListSpend of a long user": func() error {
			_, err := s.ListSpend(ctx, "app", string(make([]byte, 4096)), day, day)
			return err
		},
	} {
		if err := call(); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	// A client's event names the model its spend is kept under: one the
	// ledger's keys cannot hold is refused, and nothing is appended.
	k := key("app", "u", "spend-invalid")
	create(t, s, k, nil)
	for name, ev := range map[string]*agentrunnerv1.Event{
		"a model of 40 KB": SpendCall(0, day, string(make([]byte, 40<<10)), false),
		"a currency of 40 KB": func() *agentrunnerv1.Event {
			ev := SpendCall(0, day, "m", false)
			ev.Cost.Currency = strings.Repeat("U", 40<<10)
			return ev
		}(),
		"a priced model of 40 KB": func() *agentrunnerv1.Event {
			ev := SpendCall(0, day, "m", false)
			ev.Cost.Model = strings.Repeat("m", 40<<10)
			return ev
		}(),
	} {
		if _, err := s.AppendEvent(ctx, k, ev); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("append of %s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, events, err := s.GetSession(ctx, k, store.GetOptions{}); err != nil || len(events) != 0 {
		t.Errorf("session after refused appends: %d events, %v; want none", len(events), err)
	}
}

// testSpendClosed: the ledger's reads after Close return ErrClosed.
func testSpendClosed(t *testing.T, s store.Store) {
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.DailySpend(t.Context(), "app", "u", spendDays[0])
	wantErr(t, err, store.ErrClosed, "DailySpend after Close")
	_, err = s.ListSpend(t.Context(), "app", "u", spendDays[0], spendDays[1])
	wantErr(t, err, store.ErrClosed, "ListSpend after Close")
}
