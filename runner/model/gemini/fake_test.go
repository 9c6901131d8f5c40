package gemini

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// The fake API and the checks every provider shares are providertest's;
// what is Gemini's own is here: its genai client's configuration, its
// streaming URL and framing, and its error bodies.

// reply answers one request of the fake.
type reply = pt.Reply

// newFakeGemini starts a Gemini API stand-in on 127.0.0.1 answering with
// replies (the last again once they run out). It clears every environment
// variable genai reads, so that no test can pick up real credentials or a
// real endpoint.
func newFakeGemini(t *testing.T, replies ...reply) *pt.Fake {
	t.Helper()
	clearGenaiEnv(t)
	return pt.NewFake(t, replies...)
}

// newModel returns a Model using the real genai client pointed at f.
func newModel(t *testing.T, f *pt.Fake, name string) *Model {
	t.Helper()
	m, err := New(t.Context(), name, WithClientConfig(genai.ClientConfig{
		APIKey:      pt.APIKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.URL},
	}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// provider is Gemini's side of providertest's shared tests.
var provider = pt.Provider{
	Name:      "gemini",
	ModelName: "gemini-test",
	Start:     newFakeGemini,
	Model:     func(t *testing.T, f *pt.Fake, name string) model.Model { return newModel(t, f, name) },
	Error: func(code int, message string, headers ...string) pt.Reply {
		return apiError(code, errorStatuses[code], message, headers...)
	},
	OK: unary(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`),
}

// errorStatuses are the API's statuses of the HTTP codes the shared
// tests answer with.
var errorStatuses = map[int]string{429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}

// apiKey returns the key a request carried.
func apiKey(r pt.Request) string { return r.Header.Get("x-goog-api-key") }

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
		pt.JSON(body)(w, r)
	}
}

// events is the API's framing of server-sent events.
var events = pt.Stream{Event: func(w io.Writer, chunk string) { fmt.Fprintf(w, "data: %s\r\n\r\n", chunk) }}

// sse answers with one server-sent event per chunk. A unary call gets a
// 400, so a test that used the wrong mode fails loudly.
func sse(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "fake: this reply is for streaming calls")(w, r)
			return
		}
		events.Answer(chunks...)(w, r)
	}
}

// apiError answers with an HTTP error in the API's JSON error shape, and
// the given headers.
func apiError(code int, status, message string, headers ...string) reply {
	return pt.APIError(code, fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":%q}}`, code, message, status), headers...)
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
			events.Event(w, c)
		}
		w.(http.Flusher).Flush()
	}
	<-r.Context().Done()
	close(b.aborted)
}
