package anthropic

import (
	"testing"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestCutCallCounted: a streamed call cut off mid-answer counts, through
// the real SDK, with the usage message_start reported (the prompt's).
func TestCutCallCounted(t *testing.T) {
	const noUsageStart = `message_start: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`
	pt.RunCutCalls(t, provider, []pt.CutCase{
		{Name: "dropped mid-answer", Reply: sse.DropAfter(evStart, evTextStart, evTextHel), WantPrompt: 16},
		{Name: "cancelled mid-answer", Reply: sse.Hang(evStart, evTextStart, evTextHel), Cancel: true, WantPrompt: 16},
		{Name: "dropped, no usage reported", Reply: sse.DropAfter(noUsageStart, evTextStart, evTextHel), WantEstimated: true},
	})
}
