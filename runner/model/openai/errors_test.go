package openai

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

const okChunk = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial answer"},"finish_reason":null}]}`

// TestErrors checks that every way a call can fail comes back as a
// *model.Error with the stable code, and retryable exactly when a later
// attempt may do better.
func TestErrors(t *testing.T) {
	pt.RunErrors(t, provider, []pt.ErrorCase{
		{Name: "429 with Retry-After", Reply: apiError(429, "requests", "Rate limit reached", "Retry-After", "7"),
			WantCode: model.CodeResourceExhausted, WantRetry: true, WantAfter: 7 * time.Second, WantText: "HTTP 429: Rate limit reached"},
		{Name: "429 with retry-after-ms, stream", Stream: true, Reply: apiError(429, "requests", "slow down", "Retry-After-Ms", "1500"),
			WantCode: model.CodeResourceExhausted, WantRetry: true, WantAfter: 1500 * time.Millisecond},
		{Name: "500", Reply: apiError(500, "server_error", "boom"), WantCode: model.CodeUnavailable, WantRetry: true, WantText: `openai model "gpt-test": HTTP 500: boom`},
		{Name: "503 stream", Stream: true, Reply: apiError(503, "server_error", "overloaded"), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "504", Reply: apiError(504, "timeout", "gateway timeout"), WantCode: model.CodeDeadlineExceeded, WantRetry: true},
		{Name: "502 not JSON", Reply: func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		},
			WantCode: model.CodeUnavailable, WantRetry: true, WantText: "HTTP 502"},
		{Name: "401", Reply: apiError(401, "invalid_request_error", "Incorrect API key provided"), WantCode: model.CodePermissionDenied, WantText: "Incorrect API key"},
		{Name: "403", Reply: apiError(403, "permission_error", "no access"), WantCode: model.CodePermissionDenied},
		{Name: "400", Reply: apiError(400, "invalid_request_error", "bad messages"), WantCode: model.CodeInvalidArgument},
		{Name: "404 unknown model", Reply: apiError(404, "invalid_request_error", "The model `gpt-9` does not exist"), WantCode: model.CodeInvalidArgument},
		{Name: "malformed JSON", Reply: pt.JSON(`{"id":"c","choices":[{"index":0,`), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "no choices", Reply: pt.JSON(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}`), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "malformed JSON, stream", Stream: true, Reply: sse.Answer(okChunk, `{"choices":[{"index":`), WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "error event mid-stream", Stream: true, Reply: sse.Answer(okChunk, `{"error":{"message":"The server had an error","type":"server_error","code":null}}`),
			WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true, WantText: "server_error: The server had an error"},
		{Name: "rate limit event in stream", Stream: true, Reply: sse.Answer(`{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			WantCode: model.CodeResourceExhausted, WantRetry: true},
		{Name: "connection dropped mid-stream", Stream: true, Reply: sse.DropAfter(okChunk), WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "connection dropped before the answer", Reply: sse.DropAfter(), WantCode: model.CodeUnavailable, WantRetry: true},
		{Name: "stream ends without a finish reason", Stream: true, Reply: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: " + okChunk + "\n\n"))
		}, WantPartials: 1, WantCode: model.CodeUnavailable, WantRetry: true, WantText: "ended before the answer was complete"},
	})
}

// TestCancel checks that the caller's cancellation aborts the HTTP call and
// is reported as such, not as a model failure: while a unary call waits
// for its answer, and while a stream waits for its next chunk.
func TestCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		started := make(chan struct{})
		fake := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			close(started)
			sse.Hang(okChunk)(w, r)
		})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if !stream {
			go func() {
				<-started
				cancel()
			}()
		}
		got, err := pt.CollectErr(func(yield func(*model.Response, error) bool) {
			for r, err := range newModel(t, fake, "gpt-test").Generate(ctx, pt.HelloRequest(), stream) {
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
