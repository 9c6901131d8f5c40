package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
)

const okChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial answer"},"finish_reason":null}]}`

// TestErrors checks that every way a call can fail comes back as a
// *model.Error with the stable code, and retryable exactly when a later
// attempt may do better.
func TestErrors(t *testing.T) {
	tests := []struct {
		name           string
		stream         bool
		reply          reply
		wantPartials   int
		wantCode       string
		wantRetry      bool
		wantRetryAfter time.Duration
		wantText       string
	}{
		{name: "429 with Retry-After", reply: apiError(429, "requests", "Rate limit reached", "Retry-After", "7"),
			wantCode: model.CodeResourceExhausted, wantRetry: true, wantRetryAfter: 7 * time.Second, wantText: "HTTP 429: Rate limit reached"},
		{name: "429 with retry-after-ms, stream", stream: true, reply: apiError(429, "requests", "slow down", "Retry-After-Ms", "1500"),
			wantCode: model.CodeResourceExhausted, wantRetry: true, wantRetryAfter: 1500 * time.Millisecond},
		{name: "500", reply: apiError(500, "server_error", "boom"), wantCode: model.CodeUnavailable, wantRetry: true, wantText: `openai model "gpt-test": HTTP 500: boom`},
		{name: "503 stream", stream: true, reply: apiError(503, "server_error", "overloaded"), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "504", reply: apiError(504, "timeout", "gateway timeout"), wantCode: model.CodeDeadlineExceeded, wantRetry: true},
		{name: "502 not JSON", reply: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		},
			wantCode: model.CodeUnavailable, wantRetry: true, wantText: "HTTP 502"},
		{name: "401", reply: apiError(401, "invalid_request_error", "Incorrect API key provided"), wantCode: model.CodePermissionDenied, wantText: "Incorrect API key"},
		{name: "403", reply: apiError(403, "permission_error", "no access"), wantCode: model.CodePermissionDenied},
		{name: "400", reply: apiError(400, "invalid_request_error", "bad messages"), wantCode: model.CodeInvalidArgument},
		{name: "404 unknown model", reply: apiError(404, "invalid_request_error", "The model `gpt-9` does not exist"), wantCode: model.CodeInvalidArgument},
		{name: "malformed JSON", reply: unary(`{"id":"c","choices":[{"index":0,`), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "no choices", reply: unary(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}`), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "malformed JSON, stream", stream: true, reply: sse(okChunk, `{"choices":[{"index":`), wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "error event mid-stream", stream: true, reply: sse(okChunk, `{"error":{"message":"The server had an error","type":"server_error","code":null}}`),
			wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true, wantText: "server_error: The server had an error"},
		{name: "rate limit event in stream", stream: true, reply: sse(`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			wantCode: model.CodeResourceExhausted, wantRetry: true},
		{name: "connection dropped mid-stream", stream: true, reply: dropAfter(okChunk), wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "connection dropped before the answer", reply: dropAfter(), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "stream ends without a finish reason", stream: true, reply: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + okChunk + "\n\n"))
		}, wantPartials: 1, wantCode: model.CodeUnavailable, wantRetry: true, wantText: "ended before the answer was complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t, tt.reply)
			got, err := collectErr(fake.model(t, "gpt-test").Generate(t.Context(), helloRequest(), tt.stream))
			if len(got) != tt.wantPartials {
				t.Errorf("got %d responses before the error, want %d", len(got), tt.wantPartials)
			}
			for _, r := range got {
				if !r.Partial {
					t.Errorf("complete response before the error: %s", showResponse(r))
				}
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T), want *model.Error", err, err)
			}
			if me.Code != tt.wantCode || me.Retryable != tt.wantRetry || me.RetryAfter != tt.wantRetryAfter {
				t.Errorf("code %s retryable %v retry after %v, want %s %v %v (%v)", me.Code, me.Retryable, me.RetryAfter, tt.wantCode, tt.wantRetry, tt.wantRetryAfter, err)
			}
			if !strings.Contains(err.Error(), `openai model "gpt-test"`) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error text %q, want it to name the model and contain %q", err, tt.wantText)
			}
			if strings.Contains(err.Error(), "fake-key") {
				t.Errorf("error text %q shows the API key", err)
			}
		})
	}
}

// TestCancel checks that the caller's cancellation aborts the HTTP call and
// is reported as such, not as a model failure: while a unary call waits
// for its answer, and while a stream waits for its next chunk.
func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		started := make(chan struct{})
		fake := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			close(started)
			hang(okChunk)(w, r)
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if !stream {
			go func() {
				<-started
				cancel()
			}()
		}
		got, err := collectErr(func(yield func(*model.Response, error) bool) {
			for r, err := range fake.model(t, "gpt-test").Generate(ctx, helloRequest(), stream) {
				if err == nil {
					// The server now hangs; cancel while the
					// client waits for more.
					cancel()
				}
				if !yield(r, err) {
					return
				}
			}
		})
		if stream && (len(got) != 1 || !got[0].Partial) {
			t.Errorf("stream: got %d responses before the cancel, want 1 partial", len(got))
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stream=%v: error %v, want context.Canceled", stream, err)
		}
		var me *model.Error
		if errors.As(err, &me) {
			t.Errorf("stream=%v: a cancelled call is a *model.Error (%v)", stream, me.Code)
		}
	}
}
