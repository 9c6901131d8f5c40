package openai

import (
	"testing"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestCutCallCounted: a streamed call cut off mid-answer counts, through
// the real SDK: with the usage chunk when it came before the cut, else
// estimated and marked so.
func TestCutCallCounted(t *testing.T) {
	const usageChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`
	pt.RunCutCalls(t, provider, []pt.CutCase{
		{Name: "dropped after the usage chunk", Reply: sse.DropAfter(okChunk, usageChunk), WantPrompt: 20},
		{Name: "dropped, no usage reported", Reply: sse.DropAfter(okChunk), WantEstimated: true},
		{Name: "cancelled, no usage reported", Reply: sse.Hang(okChunk), Cancel: true, WantEstimated: true},
	})
}
