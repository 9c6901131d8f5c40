package anthropic

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

func TestErrors(t *testing.T) {
	pt.RunErrors(t, provider, []pt.ErrorCase{
		{Name: "429 with Retry-After", Reply: apiError(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", "Retry-After", "11"),
			WantCode: model.CodeResourceExhausted, WantRetry: true, WantAfter: 11 * time.Second, WantText: "HTTP 429 rate_limit_error: Number of request tokens"},
		{Name: "500", Reply: apiError(500, "api_error", "Internal server error"), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "503 stream", Stream: true, Reply: apiError(503, "api_error", "unavailable"), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "529 overloaded", Reply: apiError(529, "overloaded_error", "Overloaded"), WantCode: model.CodeUnavailable, WantRetry: true, WantText: "HTTP 529 overloaded_error: Overloaded"},
		{Name: "502 not JSON", Reply: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<html>", http.StatusBadGateway) },
			WantCode: model.CodeUnavailable, WantRetry: true, WantText: "HTTP 502"},
		{Name: "401", Reply: apiError(401, "authentication_error", "invalid x-api-key"), WantCode: model.CodePermissionDenied},
		{Name: "403", Reply: apiError(403, "permission_error", "no"), WantCode: model.CodePermissionDenied},
		{Name: "400", Reply: apiError(400, "invalid_request_error", "messages: roles must alternate"), WantCode: model.CodeInvalidArgument},
		{Name: "404 unknown model", Reply: apiError(404, "not_found_error", "model: claude-9"), WantCode: model.CodeInvalidArgument},
		{Name: "malformed JSON", Reply: pt.JSON(`{"id":"m","content":[`), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "overloaded event mid-stream", Stream: true, Reply: sse.Answer(evStart, evTextStart, evTextHel, `error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true, WantText: "error in stream: overloaded_error: Overloaded"},
		{Name: "rate limit event in stream", Stream: true, Reply: sse.Answer(`error: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`),
			WantCode: model.CodeResourceExhausted, WantRetry: true},
		{Name: "malformed event mid-stream", Stream: true, Reply: sse.Answer(evStart, evTextStart, evTextHel, `content_block_delta: {"type":"content_block_delta","index":`),
			WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "connection dropped mid-stream", Stream: true, Reply: sse.DropAfter(evStart, evTextStart, evTextHel), WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "stream ends without message_stop", Stream: true, Reply: sse.Answer(evStart, evTextStart, evTextHel), WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true,
			WantText: "ended before the answer was complete"},
	})
}
