package runner_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/retry"
	"github.com/agentrunner/agentrunner/store"
)

// cutChunk is a streamed Gemini chunk of text, with usage so far when
// prompt is not 0.
func cutChunk(text string, prompt int) string {
	if prompt == 0 {
		return fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"index":0}],"modelVersion":"fake-model-001"}`, text)
	}
	return fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":%q}]},"index":0}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":2,"totalTokenCount":%d},"modelVersion":"fake-model-001"}`, text, prompt, prompt+2)
}

// hangAfter sends the chunks (none: not even the headers), signals
// arrived, and holds the call until the client goes away.
func hangAfter(arrived chan<- struct{}, chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(chunks) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range chunks {
				fmt.Fprintf(w, "data: %s\r\n\r\n", c)
			}
			w.(http.Flusher).Flush()
		}
		close(arrived)
		<-r.Context().Done()
	}
}

// dropAfter sends the chunks, then cuts the connection without ending
// the response, as a crashed server or a proxy would.
func dropAfter(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
		}
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// TestCutCallCounted: a model call the run's end cuts off (CancelRun, a
// drain, a dropped stream, a deadline: the run's context) is counted on
// the stored event that says interrupted, priced: with the usage the
// provider reported so far, or, where it reported none, an estimate
// marked as such. The session's totals count it like any call, so that
// stopping a run just before its end dodges no budget. The real Gemini
// SDK talks to a fake of its API.
func TestCutCallCounted(t *testing.T) {
	price := &model.Price{Currency: "USD", Input: 1_000_000, Output: 4_000_000}
	withUsage, bare := cutChunk("Hello the", 40), cutChunk("Hello the", 0)
	tests := []struct {
		name string
		sse  bool
		// reply answers the call, closing arrived once it is under way.
		reply func(arrived chan<- struct{}) reply
		// stop is when the test stops the run: at the first partial, once
		// the call arrived, or never (the provider cuts it).
		stop       string
		wantPrompt int32 // 0: estimated
	}{
		{"cancelled streaming, usage reported so far", true, func(a chan<- struct{}) reply { return hangAfter(a, withUsage) }, "partial", 40},
		{"cancelled streaming, nothing reported", true, func(a chan<- struct{}) reply { return hangAfter(a, bare) }, "partial", 0},
		{"cancelled in flight, not streamed", false, func(a chan<- struct{}) reply { return hangAfter(a) }, "arrived", 0},
		{"dropped after a chunk with usage", true, func(chan<- struct{}) reply { return dropAfter(withUsage) }, "", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arrived := make(chan struct{})
			fake := newFakeGemini(t, tt.reply(arrived))
			m, err := retry.New(retry.Config{Primary: retry.Target{Model: fake.model(t), Name: "flash", Price: price}, Clock: &noSleep{}})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, llmAgent(t, llmagent.Config{Name: "root", Model: m}))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.stop == "arrived" {
				go func() {
					<-arrived
					cancel()
				}()
			}
			cfg := &agentrunnerv1.RunConfig{}
			if tt.sse {
				cfg.StreamingMode = agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
			}
			for ev, err := range h.r.Run(ctx, runner.Request{UserID: h.k.User, SessionID: h.k.Session, NewMessage: userMsg("hi"), Config: cfg}) {
				if err == nil && ev.GetPartial() && tt.stop == "partial" {
					cancel()
				}
			}
			checkCutEvent(t, h, tt.wantPrompt, price)
		})
	}
}

// checkCutEvent checks the session's last event: interrupted, counting
// the call as reported (wantPrompt) or estimated (wantPrompt 0), priced;
// and the session's totals counting it.
func checkCutEvent(t *testing.T, h *harness, wantPrompt int32, price *model.Price) {
	t.Helper()
	sess, events, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	u := last.GetUsageMetadata()
	switch {
	case !last.GetInterrupted() || last.GetErrorCode() == "":
		t.Fatalf("last event %v: want the interrupted stop event", last)
	case u == nil:
		t.Fatalf("the stop event %v counts no usage: the cut call was free", last)
	case wantPrompt != 0 && u.GetPromptTokenCount() != wantPrompt:
		t.Errorf("prompt tokens %d, want the %d the provider reported", u.GetPromptTokenCount(), wantPrompt)
	case wantPrompt == 0 && (u.GetPromptTokenCount() < 1 || !estimated(u)):
		t.Errorf("usage %v: want an estimate of the prompt, marked estimated", u)
	}
	if want := price.Cost("flash", u); last.GetCost().GetMicros() != want.GetMicros() || want.GetMicros() <= 0 {
		t.Errorf("cost %v, want %v", last.GetCost(), want)
	}
	if got := sess.GetUsage().GetTotalTokenCount(); got < u.GetTotalTokenCount() || got == 0 {
		t.Errorf("session total %d tokens, want the cut call's %d counted", got, u.GetTotalTokenCount())
	}
}

// estimated reads UsageMetadata.estimated by name, so that this test
// builds (and fails) where the field does not exist.
func estimated(u *agentrunnerv1.UsageMetadata) bool {
	fd := u.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name("estimated"))
	return fd != nil && u.ProtoReflect().Get(fd).Bool()
}

// TestCutCallsInParallelBranches: a run stopped while two parallel
// branches stream counts each branch's cut call on its own stop event,
// in its branch (a branch's error is dropped on a stop; its usage is
// not).
func TestCutCallsInParallelBranches(t *testing.T) {
	a1, a2 := make(chan struct{}), make(chan struct{})
	fake := newFakeGemini(t, hangAfter(a1, cutChunk("left words", 30)), hangAfter(a2, cutChunk("right words", 30)))
	m, err := retry.New(retry.Config{Primary: retry.Target{Model: fake.model(t), Name: "flash"}, Clock: &noSleep{}})
	if err != nil {
		t.Fatal(err)
	}
	fan, err := workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{
		llmAgent(t, llmagent.Config{Name: "left", Model: m}), llmAgent(t, llmagent.Config{Name: "right", Model: m})}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, fan)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	partials := map[string]bool{}
	for ev, err := range h.r.Run(ctx, runner.Request{UserID: h.k.User, SessionID: h.k.Session, NewMessage: userMsg("hi"), Config: cfg}) {
		if err == nil && ev.GetPartial() {
			if partials[ev.GetAuthor()] = true; len(partials) == 2 {
				cancel()
			}
		}
	}
	_, events, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A branch whose call ended with the stop counts what its provider
	// reported (30); one the parallel agent stopped reading first counts
	// an estimate, marked so. Which one a branch is, is the scheduler's.
	counted := map[string]bool{}
	for _, ev := range events {
		u := ev.GetUsageMetadata()
		if ev.GetInterrupted() && ev.GetCost() != nil && (u.GetPromptTokenCount() == 30 || (u.GetPromptTokenCount() > 0 && estimated(u))) {
			counted[ev.GetAuthor()+"@"+ev.GetBranch()] = true
		}
	}
	if !counted["left@fan.left"] || !counted["right@fan.right"] {
		t.Errorf("counted cut calls by agent@branch: %v; want each branch's counted in its branch, priced, in %v", counted, events)
	}
}
