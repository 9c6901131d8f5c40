package providers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// hangingAPI is a provider's HTTP API that hangs: before sending any
// header, or after the headers and one streamed chunk. It holds each
// request until the client goes away or the test ends, so that nothing of
// it outlives the test (Close would otherwise wait for the handlers).
type hangingAPI struct {
	srv     *httptest.Server
	calls   atomic.Int32
	release chan struct{}
}

func newHangingAPI(t *testing.T, firstChunk string) *hangingAPI {
	t.Helper()
	h := &hangingAPI{release: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.calls.Add(1)
		if firstChunk != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, firstChunk)
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-h.release:
		}
	}))
	// Cleanups run last-in first-out: release the handlers, then close.
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { close(h.release) })
	return h
}

// The first chunk of each provider's stream: some text, no end.
const (
	geminiChunk    = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Once upon\"}]},\"index\":0}]}\r\n\r\n"
	openaiChunk    = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Once upon\"},\"finish_reason\":null}]}\n\n"
	anthropicChunk = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Once upon\"}}\n\n"
)

// TestHungProviderTimesOut: a provider that hangs ends the call in band
// with DEADLINE_EXCEEDED, quickly, under the bounds an apps file's model
// entry sets: timeout bounds an attempt that never answers (and it is
// retried), idle_timeout a stream that falls silent after a chunk (cut
// off, kept as far as it got). The call timeout in the idle cases is long,
// so only the idle bound can end them in time.
func TestHungProviderTimesOut(t *testing.T) {
	for _, p := range []struct{ provider, chunk, path string }{
		{"gemini", geminiChunk, ""},
		{"openai", openaiChunk, "/v1"},
		{"anthropic", anthropicChunk, ""},
	} {
		t.Run(p.provider+"/before headers", func(t *testing.T) {
			api := newHangingAPI(t, "")
			mc := &agentrunnerv1.ModelConfig{Name: "m", Provider: p.provider, Model: "m-1", BaseUrl: api.srv.URL + p.path, ApiKeyEnv: "KEY",
				Timeout: "200ms", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 2, InitialBackoff: "1ms"}}
			got := hungCall(t, mc, false)
			if len(got) != 1 || got[0].ErrorCode != model.CodeDeadlineExceeded || got[0].Interrupted {
				t.Fatalf("got %v, want one in-band DEADLINE_EXCEEDED", show(got))
			}
			if n := api.calls.Load(); n != 2 {
				t.Errorf("fake saw %d requests, want 2 (the timed-out attempt is retried)", n)
			}
		})
		t.Run(p.provider+"/silent mid-stream", func(t *testing.T) {
			api := newHangingAPI(t, p.chunk)
			mc := &agentrunnerv1.ModelConfig{Name: "m", Provider: p.provider, Model: "m-1", BaseUrl: api.srv.URL + p.path, ApiKeyEnv: "KEY",
				Timeout: "20s", IdleTimeout: "200ms", Retry: &agentrunnerv1.RetryConfig{MaxAttempts: 2, InitialBackoff: "1ms"}}
			start := time.Now()
			got := hungCall(t, mc, true)
			last := got[len(got)-1]
			if len(got) != 2 || !got[0].Partial || last.ErrorCode != model.CodeDeadlineExceeded || !last.Interrupted ||
				!strings.Contains(last.ErrorMessage, "idle") {
				t.Fatalf("got %v, want a partial, then an interrupted DEADLINE_EXCEEDED naming the idle timeout", show(got))
			}
			if n := api.calls.Load(); n != 1 {
				t.Errorf("fake saw %d requests, want 1 (nothing is retried once streamed)", n)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the call took %v: the idle bound did not end it", d)
			}
		})
	}
}

// hungCall makes one call through the factory's model for mc.
func hungCall(t *testing.T, mc *agentrunnerv1.ModelConfig, stream bool) []*model.Response {
	t.Helper()
	f := New(Options{Models: []*agentrunnerv1.ModelConfig{mc}, Getenv: env(map[string]string{"KEY": "k"})})
	m, err := f.Model(t.Context(), mc.GetName())
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hi"}}}}}}
	var out []*model.Response
	for r, err := range m.Generate(t.Context(), req, stream) {
		if err != nil {
			t.Fatalf("Go error %v after %v; a hung provider must end in band", err, show(out))
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatal("no response")
	}
	return out
}

func show(rs []*model.Response) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "{partial=%v interrupted=%v code=%q msg=%q} ", r.Partial, r.Interrupted, r.ErrorCode, r.ErrorMessage)
	}
	return b.String()
}
