package openai

import (
	"fmt"
	"io"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// The fake API, its faults and the checks every provider shares are
// providertest's; what is OpenAI's own is here: its SDK's configuration,
// its SSE framing and its error bodies.

// newFake starts a Chat Completions stand-in on 127.0.0.1. It sets the
// SDK's environment variables to values that would break the test if
// they were read: the model must use its Config alone.
func newFake(t *testing.T, replies ...pt.Reply) *pt.Fake {
	t.Helper()
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/not-here/")
	t.Setenv("OPENAI_API_KEY", "env-key-must-not-be-used")
	return pt.NewFake(t, replies...)
}

// newModel returns a Model using the real SDK pointed at f.
func newModel(t *testing.T, f *pt.Fake, name string) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: pt.APIKey, BaseURL: f.URL + "/v1"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// provider is OpenAI's side of providertest's shared tests.
var provider = pt.Provider{
	Name:      "openai",
	ModelName: "gpt-test",
	Start:     newFake,
	Model:     func(t *testing.T, f *pt.Fake, name string) model.Model { return newModel(t, f, name) },
	Error: func(code int, message string, headers ...string) pt.Reply {
		return apiError(code, errorTypes[code], message, headers...)
	},
	OK: pt.JSON(textReply),
}

// errorTypes are the API's error types of the statuses the shared tests
// answer with.
var errorTypes = map[int]string{429: "requests", 503: "server_error"}

// sse streams chunks as the API does: one data line each, then [DONE].
var sse = pt.Stream{
	Event: func(w io.Writer, chunk string) { fmt.Fprintf(w, "data: %s\n\n", chunk) },
	End:   "data: [DONE]\n\n",
}

// apiError answers with an HTTP error in the API's JSON error shape, and
// the given headers.
func apiError(code int, typ, message string, headers ...string) pt.Reply {
	return pt.APIError(code, fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, message, typ), headers...)
}
