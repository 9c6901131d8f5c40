package anthropic

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
)

func TestErrors(t *testing.T) {
	tests := []struct {
		name         string
		stream       bool
		reply        reply
		wantPartials int
		wantCode     string
		wantRetry    bool
		wantAfter    time.Duration
		wantText     string
	}{
		{name: "429 with Retry-After", reply: apiError(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", "Retry-After", "11"),
			wantCode: model.CodeResourceExhausted, wantRetry: true, wantAfter: 11 * time.Second, wantText: "HTTP 429 rate_limit_error: Number of request tokens"},
		{name: "500", reply: apiError(500, "api_error", "Internal server error"), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "503 stream", stream: true, reply: apiError(503, "api_error", "unavailable"), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "529 overloaded", reply: apiError(529, "overloaded_error", "Overloaded"), wantCode: model.CodeUnavailable, wantRetry: true, wantText: "HTTP 529 overloaded_error: Overloaded"},
		{name: "502 not JSON", reply: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<html>", http.StatusBadGateway) },
			wantCode: model.CodeUnavailable, wantRetry: true, wantText: "HTTP 502"},
		{name: "401", reply: apiError(401, "authentication_error", "invalid x-api-key"), wantCode: model.CodePermissionDenied},
		{name: "403", reply: apiError(403, "permission_error", "no"), wantCode: model.CodePermissionDenied},
		{name: "400", reply: apiError(400, "invalid_request_error", "messages: roles must alternate"), wantCode: model.CodeInvalidArgument},
		{name: "404 unknown model", reply: apiError(404, "not_found_error", "model: claude-9"), wantCode: model.CodeInvalidArgument},
		{name: "malformed JSON", reply: unary(`{"id":"m","content":[`), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "overloaded event mid-stream", stream: true, reply: sse(evStart, evTextStart, evTextHel, `error: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true, wantText: "error in stream: overloaded_error: Overloaded"},
		{name: "rate limit event in stream", stream: true, reply: sse(`error: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`),
			wantCode: model.CodeResourceExhausted, wantRetry: true},
		{name: "malformed event mid-stream", stream: true, reply: sse(evStart, evTextStart, evTextHel, `content_block_delta: {"type":"content_block_delta","index":`),
			wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "connection dropped mid-stream", stream: true, reply: dropAfter(evStart, evTextStart, evTextHel), wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "stream ends without message_stop", stream: true, reply: sse(evStart, evTextStart, evTextHel), wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true,
			wantText: "ended before the answer was complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, tt.reply)
			got, err := collectErr(fake.model(t, "claude-test").Generate(t.Context(), helloRequest(), tt.stream))
			if len(got) != tt.wantPartials {
				t.Errorf("got %d responses before the error, want %d", len(got), tt.wantPartials)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T), want *model.Error", err, err)
			}
			if me.Code != tt.wantCode || me.Retryable != tt.wantRetry || me.RetryAfter != tt.wantAfter {
				t.Errorf("code %s retryable %v after %v, want %s %v %v (%v)", me.Code, me.Retryable, me.RetryAfter, tt.wantCode, tt.wantRetry, tt.wantAfter, err)
			}
			if !strings.Contains(err.Error(), `anthropic model "claude-test"`) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error text %q, want it to name the model and contain %q", err, tt.wantText)
			}
			if strings.Contains(err.Error(), "fake-key") {
				t.Errorf("error text %q shows the API key", err)
			}
		})
	}
}
