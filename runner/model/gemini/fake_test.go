package gemini

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"
)

// fakeGemini is a Gemini API stand-in on 127.0.0.1. It records every request
// the real genai client sends and answers with what the test says.
type fakeGemini struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []fakeRequest
}

// fakeRequest is one request as the fake saw it.
type fakeRequest struct {
	Method string
	Path   string
	Query  string
	APIKey string
	Body   map[string]any
}

// reply answers one request; body is the decoded JSON request body.
type reply func(w http.ResponseWriter, r *http.Request)

// newFakeGemini starts the fake. It clears every environment variable genai
// reads, so that no test can pick up real credentials or a real endpoint.
func newFakeGemini(t *testing.T, answer reply) *fakeGemini {
	t.Helper()
	clearGenaiEnv(t)
	f := &fakeGemini{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake: read body: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		req := fakeRequest{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			APIKey: r.Header.Get("x-goog-api-key"),
		}
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			t.Errorf("fake: request body is not JSON: %v: %s", err, raw)
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// model returns a Model using the real genai client pointed at the fake.
func (f *fakeGemini) model(t *testing.T, name string) *Model {
	t.Helper()
	m, err := New(t.Context(), name, WithClientConfig(genai.ClientConfig{
		APIKey:      "fake-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.srv.URL},
	}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// onlyRequest returns the single request the fake saw.
func (f *fakeGemini) onlyRequest(t *testing.T) fakeRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(f.requests))
	}
	return f.requests[0]
}

func clearGenaiEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"GOOGLE_API_KEY", "GEMINI_API_KEY",
		"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
		"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_REGION",
		"GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL",
		"GOOGLE_APPLICATION_CREDENTIALS",
	} {
		t.Setenv(k, "")
	}
}

// unary answers a generateContent call with body, and a streaming call with
// body as a single SSE event, so one reply serves both modes.
func unary(body string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if isStream(r) {
			sse(body)(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// sse answers with one server-sent event per chunk. A unary call gets a
// 400, so a test that used the wrong mode fails loudly.
func sse(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "fake: this reply is for streaming calls")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
			w.(http.Flusher).Flush()
		}
	}
}

// apiError answers with an HTTP error in the API's JSON error shape.
func apiError(code int, status, message string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, code, message, status)
	}
}

func isStream(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse"
}

// blocking answers a streaming call with the given chunks, then holds the
// response open until the client goes away. started is closed once the
// request arrived (before any chunk is sent); aborted is closed when the
// server sees the client cancel.
type blocking struct {
	chunks  []string
	started chan struct{}
	aborted chan struct{}
}

func newBlocking(chunks ...string) *blocking {
	return &blocking{chunks: chunks, started: make(chan struct{}), aborted: make(chan struct{})}
}

func (b *blocking) reply(w http.ResponseWriter, r *http.Request) {
	close(b.started)
	if isStream(r) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range b.chunks {
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
		}
		w.(http.Flusher).Flush()
	}
	<-r.Context().Done()
	close(b.aborted)
}
