package anthropic

import (
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

var (
	okStream  = sse.Answer(evStart, evTextStart, evTextHel, evTextLo, evStop0, evDeltaEnd, evMsgStop)
	okPartial = []string{evStart, evTextStart, evTextHel}
)

// TestFaults runs the retry wrapper over the real SDK against the fake
// with each fault of the Messages API injected.
func TestFaults(t *testing.T) {
	pt.RunFaults(t, provider, []pt.FaultCase{
		{Name: "429 with Retry-After, then success", Replies: []pt.Reply{apiError(429, "rate_limit_error", "slow", "Retry-After", "4"), pt.JSON(textReply)},
			WantText: "ok", WantCalls: 2, MinWait: 4 * time.Second},
		{Name: "500 then success", Replies: []pt.Reply{apiError(500, "api_error", "boom"), pt.JSON(textReply)}, WantText: "ok", WantCalls: 2},
		{Name: "503 then success, stream", Stream: true, Replies: []pt.Reply{apiError(503, "api_error", "down"), okStream}, WantText: "Hello", WantCalls: 2},
		{Name: "overloaded event before any text, then success", Stream: true, Replies: []pt.Reply{sse.Answer(evStart, `error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), okStream},
			WantText: "Hello", WantCalls: 2},
		{Name: "malformed JSON then success", Replies: []pt.Reply{pt.JSON(`{"content":[`), pt.JSON(textReply)}, WantText: "ok", WantCalls: 2},
		{Name: "529 every time", Replies: []pt.Reply{apiError(529, "overloaded_error", "Overloaded")}, WantCode: model.CodeUnavailable, WantCalls: 3},
		{Name: "429 every time, stream", Stream: true, Replies: []pt.Reply{apiError(429, "rate_limit_error", "slow")}, WantCode: model.CodeResourceExhausted, WantCalls: 3},
		{Name: "bad key", Replies: []pt.Reply{apiError(401, "authentication_error", "invalid x-api-key")}, WantCode: model.CodePermissionDenied, WantCalls: 1},
		{Name: "bad request", Replies: []pt.Reply{apiError(400, "invalid_request_error", "bad")}, WantCode: model.CodeInvalidArgument, WantCalls: 1},
		{Name: "hang past the timeout", Timeout: 50 * time.Millisecond, Replies: []pt.Reply{sse.Hang()}, WantCode: model.CodeDeadlineExceeded, WantCalls: 3},
		{Name: "hang mid-stream past the timeout", Stream: true, Timeout: 50 * time.Millisecond, Replies: []pt.Reply{sse.Hang(okPartial...)}, WantCode: model.CodeDeadlineExceeded, WantCalls: 1},
		{Name: "dropped mid-stream", Stream: true, Replies: []pt.Reply{sse.DropAfter(okPartial...), okStream}, WantCode: model.CodeUnavailable, WantCalls: 1},
		{Name: "dropped before the first event, then success", Stream: true, Replies: []pt.Reply{sse.DropAfter(), okStream}, WantText: "Hello", WantCalls: 2},
	})
}

// TestFallbackAnswers: the primary model is out of quota, so the fallback
// answers.
func TestFallbackAnswers(t *testing.T) {
	pt.FallbackAnswers(t, provider,
		apiError(429, "rate_limit_error", "exhausted"),
		pt.JSON(`{"id":"m","type":"message","role":"assistant","model":"claude-spare-1","content":[{"type":"text","text":"from the spare"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`),
		"from the spare", "claude-spare-1")
}
