package anthropic

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// The fake API, its faults and the checks every provider shares are
// providertest's; what is Anthropic's own is here: its SDK's
// configuration, its named SSE events and its error bodies.

// newFake starts a Messages API stand-in on 127.0.0.1. It sets the SDK's
// environment variables to values that would break the test if they were
// read.
func newFake(t *testing.T, replies ...pt.Reply) *pt.Fake {
	t.Helper()
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/not-here/")
	t.Setenv("ANTHROPIC_API_KEY", "env-key-must-not-be-used")
	return pt.NewFake(t, replies...)
}

// newModel returns a Model using the real SDK pointed at f.
func newModel(t *testing.T, f *pt.Fake, name string) *Model {
	t.Helper()
	m, err := New(Config{Model: name, APIKey: pt.APIKey, BaseURL: f.URL})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// provider is Anthropic's side of providertest's shared tests.
var provider = pt.Provider{
	Name:      "anthropic",
	ModelName: "claude-test",
	Start:     newFake,
	Model:     func(t *testing.T, f *pt.Fake, name string) model.Model { return newModel(t, f, name) },
	Error: func(code int, message string, headers ...string) pt.Reply {
		return apiError(code, errorTypes[code], message, headers...)
	},
	OK: pt.JSON(textReply),
}

// errorTypes are the API's error types of the statuses the shared tests
// answer with.
var errorTypes = map[int]string{429: "rate_limit_error", 503: "overloaded_error"}

// sse streams events written "type: {json}", as the API names and sends
// them.
var sse = pt.Stream{Event: func(w io.Writer, e string) {
	typ, data, _ := strings.Cut(e, ": ")
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
}}

// apiError answers with an HTTP error in the API's JSON error shape, and
// the given headers.
func apiError(code int, typ, message string, headers ...string) pt.Reply {
	return pt.APIError(code, fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, message), headers...)
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
