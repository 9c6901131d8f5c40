// Package providertest holds what the tests of the model providers
// (runner/model/gemini, openai, anthropic) share, so that each keeps only
// what is its own: its wire format's bodies and its real SDK. It has a
// fake HTTP API on 127.0.0.1 that records every request and answers with
// scripted replies, faults among them (error statuses, Retry-After
// headers, dropped and hanging streams); a retry clock that records waits
// instead of sleeping; helpers that drain and compare model responses;
// and the test bodies every provider runs alike (RunGenerate, RunErrors,
// RunFaults, FallbackAnswers, RetryAfterHeader).
//
// It is imported only from _test.go files. It must not import a provider
// (runner/model/gemini, openai, anthropic, offline, providers) nor any
// provider SDK: the providers' tests import it, and the tests must go
// through each provider's own SDK. Nor must it import the runner and the
// packages above the model (runner, runner/agent, runner/tool,
// runner/plugin, runner/memory, runner/apps, runner/internal/), store,
// server, cmd or examples.
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// APIKey is the key the providers' tests give their models: errors must
// never show it.
const APIKey = "fake-key"

// Reply answers one request of a Fake.
type Reply func(w http.ResponseWriter, r *http.Request)

// Request is one request as a Fake saw it; Body is its decoded JSON.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   map[string]any
}

// Fake is a provider's API stand-in on 127.0.0.1. It records every request
// the real SDK sends and answers the nth request with the nth reply (the
// last reply again once they run out, so one reply answers every call).
type Fake struct {
	// URL is the fake's base URL, to give the SDK.
	URL string

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// NewFake starts a fake answering with replies; it stops when the test
// ends. A request whose body is not JSON fails the test: every provider
// API takes JSON.
func NewFake(t testing.TB, replies ...Reply) *Fake {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("providertest: a fake needs at least one reply")
	}
	f := &Fake{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake: read body: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
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
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Seen returns the requests so far, in order.
func (f *Fake) Seen() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Only returns the one request the fake saw, failing the test when it saw
// another number.
func (f *Fake) Only(t testing.TB) Request {
	t.Helper()
	seen := f.Seen()
	if len(seen) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(seen))
	}
	return seen[0]
}

// JSON answers with body as application/json.
func JSON(body string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// APIError answers with HTTP status code and body, an error in the API's
// own JSON shape, and the headers given as name, value pairs (such as
// Retry-After).
func APIError(code int, body string, headers ...string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// Stream is a provider's server-sent events framing: the APIs differ in
// how they write an event and in how a complete stream ends, not in how
// a stream fails.
type Stream struct {
	// Event writes one event of the provider's wire format.
	Event func(w io.Writer, event string)
	// End, when set, is written after the last event of a complete
	// stream (OpenAI's "data: [DONE]").
	End string
}

// Answer answers with the events as a complete stream, flushing each.
func (s Stream) Answer(events ...string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			s.Event(w, e)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, s.End)
	}
}

// DropAfter sends the events, then cuts the connection without ending
// the response, as a crashed server or a proxy would.
func (s Stream) DropAfter(events ...string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			s.Event(w, e)
		}
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
	}
}

// Hang holds the request until the client goes away, after sending the
// events (none: not even the headers are sent).
func (s Stream) Hang(events ...string) Reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(events) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range events {
				s.Event(w, e)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}
}
