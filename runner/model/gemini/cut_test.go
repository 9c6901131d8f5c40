package gemini

import (
	"testing"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestCutCallCounted: a streamed call cut off mid-answer counts, through
// the real SDK: with the usage the chunks reported so far (each carries
// the running total), else estimated and marked so.
func TestCutCallCounted(t *testing.T) {
	const (
		withUsage = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello there"}]},"index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":3,"totalTokenCount":43},"modelVersion":"gemini-test-001"}`
		bare      = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello there"}]},"index":0}],"modelVersion":"gemini-test-001"}`
	)
	pt.RunCutCalls(t, provider, []pt.CutCase{
		{Name: "dropped after a chunk with usage", Reply: events.DropAfter(withUsage), WantPrompt: 40},
		{Name: "dropped, no usage reported", Reply: events.DropAfter(bare), WantEstimated: true},
		{Name: "cancelled after a chunk with usage", Reply: events.Hang(withUsage), Cancel: true, WantPrompt: 40},
		{Name: "cancelled, no usage reported", Reply: events.Hang(bare), Cancel: true, WantEstimated: true},
	})
}
