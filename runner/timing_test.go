package runner

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// stepClock is a clock that moves only when told: the runner's, the
// retry wrapper's and the fake model's, so that every timing is known.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

// t0 is when stepClock starts: a time with nanoseconds, which the record
// must keep.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep is retry.Clock's: the wait passes at once.
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advance(d)
	return ctx.Err()
}

// timedModel answers on the clock: its first chunk 100ms after the call,
// each further one 30ms later. Streamed, each chunk is a partial and the
// complete answer comes with the last; else the complete answer comes
// when the last chunk would. A call whose request ends with a function
// response is answered "done"; else, with call set, the model calls it.
type timedModel struct {
	clock  *stepClock
	chunks []string
	call   string
}

func (m *timedModel) Name() string { return "timed" }

func (m *timedModel) Generate(_ context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := req.Contents[len(req.Contents)-1].GetParts()[0]
		if m.call != "" && last.GetFunctionResponse() == nil {
			m.clock.advance(100 * time.Millisecond)
			yield(&model.Response{TurnComplete: true, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
				{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: m.call}}}}}}, nil)
			return
		}
		text := ""
		for i, c := range m.chunks {
			m.clock.advance(map[bool]time.Duration{true: 100 * time.Millisecond, false: 30 * time.Millisecond}[i == 0])
			text += c
			if stream && !yield(&model.Response{Partial: true, Content: modelText(c)}, nil) {
				return
			}
		}
		yield(&model.Response{TurnComplete: true, FinishReason: "STOP", Content: modelText(text)}, nil)
	}
}

// timedRunner serves root on a fresh store with the clock as the runner's.
func timedRunner(t *testing.T, clock *stepClock, root agent.Agent) (*Runner, *boltstore.Store, store.SessionKey) {
	t.Helper()
	db := newTestStore(t)
	r, err := New(Config{AppName: testApp, Root: root, Store: db, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r, db, newSession(t, db, "u1", "s1")
}

// storedEvents re-reads the session's events from the store.
func storedEvents(t *testing.T, db *boltstore.Store, k store.SessionKey) []*agentrunnerv1.Event {
	t.Helper()
	_, evs, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func wantDuration(t *testing.T, what string, got *durationpb.Duration, want time.Duration) {
	t.Helper()
	if got == nil || got.AsDuration() != want {
		t.Errorf("%s = %v, want %v", what, got.AsDuration(), want)
	}
}

// TestModelCallTiming: a model call's event says when the call started,
// its time to first chunk (the first partial streamed, or unstreamed the
// answer) and its duration, from the runner's clock; the stored event
// keeps them, and its timestamp, to the nanosecond.
func TestModelCallTiming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		first  time.Duration
	}{
		{"unstreamed", false, 160 * time.Millisecond},
		{"streamed", true, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: t0}
			m := &timedModel{clock: clock, chunks: []string{"a", "b", "c"}}
			r, db, k := timedRunner(t, clock, llm(t, llmagent.Config{Name: "root", Model: m}))
			req := request(k, "hi")
			if tc.stream {
				req.Config = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
			}
			res := mustRun(t, r, req)
			answer := res.events[len(res.events)-1]
			stored := storedEvents(t, db, k)
			for _, ev := range []*agentrunnerv1.Event{answer, stored[len(stored)-1]} {
				tm := ev.GetTiming()
				if !tm.GetStartTime().AsTime().Equal(t0) {
					t.Errorf("start = %v, want %v", tm.GetStartTime().AsTime(), t0)
				}
				wantDuration(t, "time to first chunk", tm.GetTimeToFirstChunk(), tc.first)
				wantDuration(t, "duration", tm.GetDuration(), 160*time.Millisecond)
				if len(tm.GetAttempts()) != 0 {
					t.Errorf("attempts = %v, want none for one attempt", tm.GetAttempts())
				}
				if got, want := ev.GetTimestamp().AsTime(), t0.Add(160*time.Millisecond); !got.Equal(want) {
					t.Errorf("timestamp = %v, want %v (nanoseconds kept)", got, want)
				}
			}
			if stored[0].GetTiming() != nil {
				t.Errorf("the user's message has a timing: %v", stored[0].GetTiming())
			}
		})
	}
}

// TestToolTiming: a tool's function response says when the tool was
// called and how long it took.
func TestToolTiming(t *testing.T) {
	clock := &stepClock{now: t0}
	slow, err := tool.NewFunction("slow", "takes 250ms", func(tool.Context, struct{}) (map[string]any, error) {
		clock.advance(250 * time.Millisecond)
		return map[string]any{"ok": true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &timedModel{clock: clock, chunks: []string{"done"}, call: "slow"}
	r, db, k := timedRunner(t, clock, llm(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{slow}}))
	mustRun(t, r, request(k, "hi"))
	fr := responseOf(t, storedEvents(t, db, k), "c1")
	if got, want := fr.GetTiming().GetStartTime().AsTime(), t0.Add(100*time.Millisecond); !got.Equal(want) {
		t.Errorf("tool start = %v, want %v", got, want)
	}
	wantDuration(t, "tool duration", fr.GetTiming().GetDuration(), 250*time.Millisecond)
}

// responseOf returns the function response to call id among events.
func responseOf(t *testing.T, events []*agentrunnerv1.Event, id string) *agentrunnerv1.FunctionResponse {
	t.Helper()
	for _, ev := range events {
		for _, p := range ev.GetContent().GetParts() {
			if fr := p.GetFunctionResponse(); fr.GetId() == id {
				return fr
			}
		}
	}
	t.Fatalf("no response to %s", id)
	return nil
}

// TestClientToolTiming: a tool the caller executes is timed from its call
// to the runner's receipt of the answer; a timing the caller sent is
// replaced.
func TestClientToolTiming(t *testing.T) {
	clock := &stepClock{now: t0}
	lookup, err := tool.NewClientFunction("lookup", "", map[string]any{"type": "object"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &timedModel{clock: clock, chunks: []string{"done"}, call: "lookup"}
	r, db, k := timedRunner(t, clock, llm(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{lookup}}))
	mustRun(t, r, request(k, "hi"))
	clock.advance(5 * time.Second)
	answer := reply("c1", "lookup", map[string]any{"found": true})
	answer.GetFunctionResponse().Timing = &agentrunnerv1.Timing{Duration: durationpb.New(time.Hour)}
	mustRun(t, r, Request{UserID: k.User, SessionID: k.Session, NewMessage: content("user", answer)})
	fr := responseOf(t, storedEvents(t, db, k), "c1")
	if got, want := fr.GetTiming().GetStartTime().AsTime(), t0.Add(100*time.Millisecond); !got.Equal(want) {
		t.Errorf("client tool start = %v, want the call's time %v", got, want)
	}
	wantDuration(t, "client tool duration", fr.GetTiming().GetDuration(), 5*time.Second)
}

// failing fails every call after 50ms, as an overloaded provider does.
type failing struct{ clock *stepClock }

func (f failing) Name() string { return "overloaded" }

func (f failing) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		f.clock.advance(50 * time.Millisecond)
		yield(nil, model.Unavailable("overloaded"))
	}
}

// TestRetryAttemptsTiming: a call retried and then answered by a fallback
// lists each attempt, with its model, its time and why it failed; the
// call's own timing spans them all, waits included.
func TestRetryAttemptsTiming(t *testing.T) {
	clock := &stepClock{now: t0}
	p := retry.Policy{MaxAttempts: 2, InitialBackoff: time.Second}
	m, err := retry.New(retry.Config{
		Primary:   retry.Target{Model: failing{clock}, Policy: p},
		Fallbacks: []retry.Target{{Model: &timedModel{clock: clock, chunks: []string{"ok"}}, Policy: p}},
		Clock:     clock,
		Jitter:    func() float64 { return 0.5 }, // a wait of 750ms
	})
	if err != nil {
		t.Fatal(err)
	}
	r, db, k := timedRunner(t, clock, llm(t, llmagent.Config{Name: "root", Model: m}))
	mustRun(t, r, request(k, "hi"))
	stored := storedEvents(t, db, k)
	tm := stored[len(stored)-1].GetTiming()
	type attempt struct {
		model       string
		start, took time.Duration
		code        string
	}
	want := []attempt{
		{"overloaded", 0, 50 * time.Millisecond, model.CodeUnavailable},
		{"overloaded", 800 * time.Millisecond, 50 * time.Millisecond, model.CodeUnavailable},
		{"timed", 850 * time.Millisecond, 100 * time.Millisecond, ""},
	}
	if len(tm.GetAttempts()) != len(want) {
		t.Fatalf("attempts = %v, want %d", tm.GetAttempts(), len(want))
	}
	for i, a := range tm.GetAttempts() {
		got := attempt{a.GetModel(), a.GetStartTime().AsTime().Sub(t0), a.GetDuration().AsDuration(), a.GetErrorCode()}
		if got != want[i] {
			t.Errorf("attempt %d = %+v, want %+v", i, got, want[i])
		}
	}
	wantDuration(t, "the fallback's time to first chunk", tm.GetAttempts()[2].GetTimeToFirstChunk(), 100*time.Millisecond)
	if tm.GetAttempts()[0].GetTimeToFirstChunk() != nil {
		t.Errorf("a failed attempt without a chunk has a time to first chunk")
	}
	wantDuration(t, "call duration", tm.GetDuration(), 950*time.Millisecond)
	wantDuration(t, "call time to first chunk", tm.GetTimeToFirstChunk(), 950*time.Millisecond)
}
