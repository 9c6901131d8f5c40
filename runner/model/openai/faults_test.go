package openai

import (
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

const (
	finalChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`
)

// TestFaults runs the retry wrapper over the real SDK against the fake
// with each fault of the Chat Completions API injected.
func TestFaults(t *testing.T) {
	pt.RunFaults(t, provider, []pt.FaultCase{
		{Name: "429 with Retry-After, then success", Replies: []pt.Reply{apiError(429, "requests", "Rate limit", "Retry-After", "3"), pt.JSON(textReply)},
			WantText: "ok", WantCalls: 2, MinWait: 3 * time.Second},
		{Name: "500 then success", Replies: []pt.Reply{apiError(500, "server_error", "boom"), pt.JSON(textReply)}, WantText: "ok", WantCalls: 2},
		{Name: "503 then success, stream", Stream: true, Replies: []pt.Reply{apiError(503, "server_error", "overloaded"), sse.Answer(finalChunk)}, WantText: "Hello", WantCalls: 2},
		{Name: "malformed JSON then success", Replies: []pt.Reply{pt.JSON(`{"choices":[`), pt.JSON(textReply)}, WantText: "ok", WantCalls: 2},
		{Name: "dropped before the first chunk, then success", Stream: true, Replies: []pt.Reply{sse.DropAfter(), sse.Answer(finalChunk)}, WantText: "Hello", WantCalls: 2},
		{Name: "503 every time", Replies: []pt.Reply{apiError(503, "server_error", "overloaded")}, WantCode: model.CodeUnavailable, WantCalls: 3},
		{Name: "429 every time", Stream: true, Replies: []pt.Reply{apiError(429, "requests", "Rate limit")}, WantCode: model.CodeResourceExhausted, WantCalls: 3},
		{Name: "bad key", Replies: []pt.Reply{apiError(401, "invalid_request_error", "Incorrect API key")}, WantCode: model.CodePermissionDenied, WantCalls: 1},
		{Name: "bad request", Replies: []pt.Reply{apiError(400, "invalid_request_error", "bad")}, WantCode: model.CodeInvalidArgument, WantCalls: 1},
		{Name: "hang past the timeout", Timeout: 50 * time.Millisecond, Replies: []pt.Reply{sse.Hang()}, WantCode: model.CodeDeadlineExceeded, WantCalls: 3},
		{Name: "hang mid-stream past the timeout", Stream: true, Timeout: 50 * time.Millisecond, Replies: []pt.Reply{sse.Hang(okChunk)}, WantCode: model.CodeDeadlineExceeded, WantCalls: 1},
		{Name: "dropped mid-stream", Stream: true, Replies: []pt.Reply{sse.DropAfter(okChunk), sse.Answer(finalChunk)}, WantCode: model.CodeUnavailable, WantCalls: 1},
		{Name: "malformed chunk mid-stream", Stream: true, Replies: []pt.Reply{sse.Answer(okChunk, `{"choices":`), sse.Answer(finalChunk)}, WantCode: model.CodeUnavailable, WantCalls: 1},
	})
}

// TestFallbackAnswers: the primary deployment is out of quota, so the
// fallback (another server, another model) answers.
func TestFallbackAnswers(t *testing.T) {
	pt.FallbackAnswers(t, provider,
		apiError(429, "insufficient_quota", "You exceeded your current quota"),
		pt.JSON(`{"id":"c","object":"chat.completion","created":1,"model":"spare-001","choices":[{"index":0,"message":{"role":"assistant","content":"from the spare"},"finish_reason":"stop"}]}`),
		"from the spare", "spare-001")
}
