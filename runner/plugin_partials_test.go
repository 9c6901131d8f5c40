package runner_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/plugin"
)

// streamingRedactor replaces every event, partial or complete, whose text
// says "secret", and notes whether it saw partial events.
type streamingRedactor struct {
	mu       *sync.Mutex
	partials *int
}

func (streamingRedactor) Name() string { return "streaming-redactor" }

func (r streamingRedactor) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if ev.GetPartial() {
		r.mu.Lock()
		*r.partials++
		r.mu.Unlock()
	}
	for _, p := range ev.GetContent().GetParts() {
		if strings.Contains(p.GetText(), "secret") {
			return &agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "[redacted]"}}}}}, nil
		}
	}
	return nil, nil
}

// echoing serves one LLM agent on the offline model, which streams its
// echo of the user's message word by word, with plugins p.
func echoing(t *testing.T, p ...plugin.Plugin) *feature {
	root := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "echo", Model: offline.New(offline.Config{})}))
	f := newFeature(t, runner.Config{Root: root, Plugins: p})
	f.session(t, "s1")
	return f
}

// TestPluginRedactsStreamedPartials checks that on_event sees the partial
// events of a streamed answer, marked partial, so that a redacting plugin's
// text reaches the caller neither streamed nor stored.
func TestPluginRedactsStreamedPartials(t *testing.T) {
	var mu sync.Mutex
	var partials int
	f := echoing(t, streamingRedactor{mu: &mu, partials: &partials})
	res := f.run(t, streamed("s1", "the secret is 42"))
	if res.err != nil {
		t.Fatalf("run: %v", res.err)
	}
	streamed := 0
	for _, ev := range res.events {
		if ev.GetPartial() {
			streamed++
		}
		for _, p := range ev.GetContent().GetParts() {
			if ev.GetAuthor() != "user" && strings.Contains(p.GetText(), "secret") {
				t.Errorf("the caller got %q (partial=%v): the plugin redacts it", p.GetText(), ev.GetPartial())
			}
		}
	}
	mu.Lock()
	seen := partials
	mu.Unlock()
	if streamed == 0 || seen != streamed {
		t.Errorf("%d partial events streamed, on_event saw %d partial events; want every one", streamed, seen)
	}
	if last := res.kinds[len(res.kinds)-1]; last != "echo: [redacted]" {
		t.Errorf("the answer is %q, want it redacted", last)
	}
	for _, ev := range f.events(t, "s1") {
		if ev.GetAuthor() != "user" && strings.Contains(ev.GetContent().GetParts()[0].GetText(), "secret") {
			t.Errorf("stored %q", ev.GetContent().GetParts()[0].GetText())
		}
	}
}

// withholder drops every partial event: the caller gets only answers a
// guard has seen whole.
type withholder struct{}

func (withholder) Name() string { return "withholder" }

func (withholder) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if ev.GetPartial() {
		return nil, plugin.ErrDropPartial
	}
	return nil, nil
}

// TestPluginDropsPartials checks that an on_event hook can drop partial
// events: the stream then carries only the complete answer, and no error.
func TestPluginDropsPartials(t *testing.T) {
	res := echoing(t, withholder{}).run(t, streamed("s1", "hello there"))
	want := []string{"echo: offline model: you said: hello there"}
	if res.err != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("stream %v %q, want %q", res.err, res.kinds, want)
	}
}
