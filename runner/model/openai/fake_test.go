package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeOpenAI is a Chat Completions stand-in on 127.0.0.1. It records every
// request the real SDK sends and answers the nth request with the nth
// reply (the last reply again once they run out).
type fakeOpenAI struct {
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []fakeRequest
}

// fakeRequest is one request as the fake saw it.
type fakeRequest struct {
	Method string
	Path   string
	Auth   string
	Body   map[string]any
}

type reply func(w http.ResponseWriter, r *http.Request)

// newFake starts the fake. It sets the SDK's environment variables to
// values that would break the test if they were read: the model must use
// its Config alone.
func newFake(t *testing.T, replies ...reply) *fakeOpenAI {
	t.Helper()
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/not-here/")
	t.Setenv("OPENAI_API_KEY", "env-key-must-not-be-used")
	f := &fakeOpenAI{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake: read body: %v", err)
			return
		}
		req := fakeRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
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

// model returns a Model using the real SDK pointed at the fake.
func (f *fakeOpenAI) model(t *testing.T, name string) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: "fake-key", BaseURL: f.srv.URL + "/v1"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

func (f *fakeOpenAI) seen() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// unary answers with body as application/json.
func unary(body string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// sse answers with one event per chunk, then [DONE].
func sse(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// apiError answers with an HTTP error in the API's JSON error shape, and
// the given headers.
func apiError(code int, typ, message string, headers ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, message, typ)
	}
}

// dropAfter sends the chunks as SSE events, then cuts the connection
// without ending the response, as a crashed server or a proxy would.
func dropAfter(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
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
// given chunks (none: the headers are not even sent).
func hang(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(chunks) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range chunks {
				fmt.Fprintf(w, "data: %s\n\n", c)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}
