package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAnthropic is a Messages API stand-in on 127.0.0.1. It records every
// request the real SDK sends and answers the nth request with the nth
// reply (the last reply again once they run out).
type fakeAnthropic struct {
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []fakeRequest
}

type fakeRequest struct {
	Path    string
	APIKey  string
	Version string
	Body    map[string]any
}

type reply func(w http.ResponseWriter, r *http.Request)

// newFake starts the fake. It sets the SDK's environment variables to
// values that would break the test if they were read.
func newFake(t *testing.T, replies ...reply) *fakeAnthropic {
	t.Helper()
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/not-here/")
	t.Setenv("ANTHROPIC_API_KEY", "env-key-must-not-be-used")
	f := &fakeAnthropic{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake: read body: %v", err)
			return
		}
		req := fakeRequest{Path: r.URL.Path, APIKey: r.Header.Get("X-Api-Key"), Version: r.Header.Get("Anthropic-Version")}
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			t.Errorf("fake: request body is not JSON: %v: %s", err, raw)
		}
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, req)
		answer := f.replies[min(n, len(f.replies)-1)]
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAnthropic) model(t *testing.T, name string) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: "fake-key", BaseURL: f.srv.URL})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func (f *fakeAnthropic) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

func unary(body string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// sse answers with the events, each "type: {json}" as the API names and
// sends them.
func sse(events ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			writeEvent(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

func writeEvent(w io.Writer, e string) {
	typ, data, _ := strings.Cut(e, ": ")
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
}

func apiError(code int, typ, message string, headers ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, message)
	}
}

// dropAfter sends the events, then cuts the connection mid-response.
func dropAfter(events ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			writeEvent(w, e)
		}
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
	}
}

// hang holds the request until the client goes away, after sending the
// events (none: not even the headers).
func hang(events ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(events) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				writeEvent(w, e)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}

// Events of a streamed answer, as the API sends them.
const (
	evStart     = `message_start: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":0}}}`
	evTextStart = `content_block_start: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	evTextHel   = `content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`
	evTextLo    = `content_block_delta: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}`
	evStop0     = `content_block_stop: {"type":"content_block_stop","index":0}`
	evDeltaEnd  = `message_delta: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`
	evMsgStop   = `message_stop: {"type":"message_stop"}`
	evPing      = `ping: {"type":"ping"}`
)
