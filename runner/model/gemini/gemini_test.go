package gemini

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

func thoughtPart(s string, sig string) *agentrunnerv1.Part {
	p := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}, Thought: true}
	if sig != "" {
		p.ThoughtSignature = []byte(sig)
	}
	return p
}

func signed(p *agentrunnerv1.Part, sig string) *agentrunnerv1.Part {
	p.ThoughtSignature = []byte(sig)
	return p
}

func partial(version string, parts ...*agentrunnerv1.Part) *model.Response {
	return &model.Response{Content: pt.ModelContent(parts...), Partial: true, ModelVersion: version}
}

func usage(prompt, candidates, total int32) *agentrunnerv1.UsageMetadata {
	return &agentrunnerv1.UsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: candidates, TotalTokenCount: total}
}

// TestGenerate runs the real genai client against the fake for each kind of
// answer the API gives, unary and streaming.

// fakeVersion is the model version the fake Gemini reports.
const fakeVersion = "fake-model-001"

// generateCases are Gemini replies and the responses Generate must make of them.
var generateCases = []pt.GenerateCase{
	{
		Name:  "plain text",
		Reply: unary(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"index":0,"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"fake-model-001","responseId":"r1"}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("Hello")), TurnComplete: true, FinishReason: "STOP",
			Usage: usage(3, 2, 5), ModelVersion: fakeVersion,
		}},
	},
	{
		// A unary response is kept as the model returned it: its two
		// text parts are not merged.
		Name:  "function call with thoughts",
		Reply: unary(`{"candidates":[{"content":{"role":"model","parts":[{"text":"need ","thought":true},{"text":"weather","thought":true},{"functionCall":{"id":"call-1","name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2lnLTE="}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":4,"thoughtsTokenCount":6,"cachedContentTokenCount":1,"toolUsePromptTokenCount":2,"totalTokenCount":20},"modelVersion":"fake-model-001"}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(thoughtPart("need ", ""), thoughtPart("weather", ""),
				signed(pt.Call("call-1", "get_weather", map[string]any{"city": "Paris"}), "sig-1")),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: fakeVersion,
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 4, ThoughtsTokenCount: 6, CachedContentTokenCount: 1, ToolUsePromptTokenCount: 2, TotalTokenCount: 20},
		}},
	},
	{
		Name:   "stream text",
		Stream: true,
		Reply: sse(
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"modelVersion":"fake-model-001"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"lo, "}]}}],"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3},"modelVersion":"fake-model-001"}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"world"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":3,"totalTokenCount":6},"modelVersion":"fake-model-001"}`,
		),
		Want: []*model.Response{
			partial(fakeVersion, pt.Text("Hel")),
			partial(fakeVersion, pt.Text("lo, ")),
			partial(fakeVersion, pt.Text("world")),
			{Content: pt.ModelContent(pt.Text("Hello, world")), TurnComplete: true, FinishReason: "STOP", Usage: usage(3, 3, 6), ModelVersion: fakeVersion},
		},
	},
	{
		// Thoughts merge apart from the answer, the function call is
		// kept whole and only in the complete response, the trailing
		// signature on an empty text part lands on the merged text, and
		// usage comes from the last chunk that has it.
		Name:   "stream thoughts, text and a function call",
		Stream: true,
		Reply: sse(
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me ","thought":true}]}}]}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"think","thought":true}]}}],"usageMetadata":{"promptTokenCount":1,"totalTokenCount":1}}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Checking"},{"text":" the"}]}}]}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":" weather"},{"text":"","thoughtSignature":"c2lnLTI="}]}}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":5,"totalTokenCount":12}}`,
			`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"call-9","name":"get_weather","args":{"city":"Oslo"}}}]},"finishReason":"STOP"}],"modelVersion":"fake-model-002"}`,
		),
		Want: []*model.Response{
			partial("", thoughtPart("Let me ", "")),
			partial("", thoughtPart("think", "")),
			partial("", pt.Text("Checking"), pt.Text(" the")),
			partial("", pt.Text(" weather")),
			{
				Content: pt.ModelContent(thoughtPart("Let me think", ""), signed(pt.Text("Checking the weather"), "sig-2"),
					pt.Call("call-9", "get_weather", map[string]any{"city": "Oslo"})),
				TurnComplete: true, FinishReason: "STOP", Usage: usage(7, 5, 12), ModelVersion: "fake-model-002",
			},
		},
	},
	{
		Name:  "blocked prompt",
		Reply: unary(`{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH"}]},"usageMetadata":{"promptTokenCount":4,"totalTokenCount":4},"modelVersion":"fake-model-001"}`),
		Want: []*model.Response{{
			TurnComplete: true, ErrorCode: "SAFETY", ErrorMessage: "the prompt was blocked (SAFETY)",
			Usage: usage(4, 0, 4), ModelVersion: fakeVersion,
		}},
	},
	{
		Name:   "blocked prompt, stream",
		Stream: true,
		Reply:  sse(`{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT","blockReasonMessage":"no"},"modelVersion":"fake-model-001"}`),
		Want: []*model.Response{{
			TurnComplete: true, ErrorCode: "PROHIBITED_CONTENT", ErrorMessage: "no", ModelVersion: fakeVersion,
		}},
	},
	{
		Name:  "safety stop without content",
		Reply: unary(`{"candidates":[{"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_HARASSMENT","probability":"HIGH","blocked":true}]}]}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(), TurnComplete: true, FinishReason: "SAFETY",
			ErrorCode: "SAFETY", ErrorMessage: "the response was stopped for safety reasons",
		}},
	},
	{
		Name:   "max tokens keeps the truncated answer",
		Stream: true,
		Reply: sse(
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"The answer is"}]}}]}`,
			// genai drops finishMessage for the Gemini Developer API, so
			// the message is ours.
			`{"candidates":[{"content":{"role":"model","parts":[{"text":" long"}]},"finishReason":"MAX_TOKENS","finishMessage":"ignored"}]}`,
		),
		Want: []*model.Response{
			partial("", pt.Text("The answer is")),
			partial("", pt.Text(" long")),
			{Content: pt.ModelContent(pt.Text("The answer is long")), TurnComplete: true, FinishReason: "MAX_TOKENS", ErrorCode: "MAX_TOKENS", ErrorMessage: "the response reached the maximum number of output tokens"},
		},
	},
	{
		Name:  "no candidates",
		Reply: unary(`{"modelVersion":"fake-model-001"}`),
		Want: []*model.Response{{
			TurnComplete: true, ErrorCode: "UNKNOWN_ERROR", ErrorMessage: "the model returned no candidates", ModelVersion: fakeVersion,
		}},
	},
	{
		Name:  "candidate without content",
		Reply: unary(`{"candidates":[{"finishReason":"STOP"}]}`),
		Want:  []*model.Response{{Content: pt.ModelContent(), TurnComplete: true, FinishReason: "STOP"}},
	},
	{
		Name:   "empty parts, stream",
		Stream: true,
		Reply:  sse(`{"candidates":[{"content":{"role":"model","parts":[]}}]}`, `{"candidates":[{"content":{"role":"model"},"finishReason":"STOP"}]}`),
		Want:   []*model.Response{{Content: pt.ModelContent(), TurnComplete: true, FinishReason: "STOP"}},
	},
	{
		// Parts agentrunner.v1 cannot hold are dropped, not turned into
		// empty text.
		Name:  "unsupported part kinds",
		Reply: unary(`{"candidates":[{"content":{"role":"model","parts":[{"executableCode":{"language":"PYTHON","code":"print(1)"}},{"text":"1"}]},"finishReason":"STOP"}]}`),
		Want:  []*model.Response{{Content: pt.ModelContent(pt.Text("1")), TurnComplete: true, FinishReason: "STOP"}},
	},
}

func TestGenerate(t *testing.T) {
	pt.RunGenerate(t, provider, generateCases, nil)
}

// TestGenerateAPIErrors checks that HTTP errors, and an error event inside
// a stream, come back as *APIError carrying the code and status.
func TestGenerateAPIErrors(t *testing.T) {
	tests := []struct {
		name         string
		stream       bool
		reply        reply
		wantPartials int
		wantCode     int
		wantStatus   string
		wantRetry    bool
		wantText     string
	}{
		{name: "500", reply: apiError(500, "INTERNAL", "An internal error has occurred."), wantCode: 500, wantStatus: "INTERNAL", wantRetry: true,
			wantText: `gemini model "gemini-test": HTTP 500 INTERNAL: An internal error has occurred.`},
		{name: "500 stream", stream: true, reply: apiError(500, "INTERNAL", "boom"), wantCode: 500, wantStatus: "INTERNAL", wantRetry: true},
		{name: "429", reply: apiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), wantCode: 429, wantStatus: "RESOURCE_EXHAUSTED", wantRetry: true,
			wantText: `gemini model "gemini-test": HTTP 429 RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).`},
		{name: "429 stream", stream: true, reply: apiError(429, "RESOURCE_EXHAUSTED", "quota"), wantCode: 429, wantStatus: "RESOURCE_EXHAUSTED", wantRetry: true},
		{name: "400", reply: apiError(400, "INVALID_ARGUMENT", "Request contains an invalid argument."), wantCode: 400, wantStatus: "INVALID_ARGUMENT"},
		{
			name:     "not JSON",
			reply:    func(w http.ResponseWriter, r *http.Request) { http.Error(w, "upstream down", http.StatusBadGateway) },
			wantCode: 502, wantStatus: "502 Bad Gateway", wantRetry: true,
			wantText: `gemini model "gemini-test": HTTP 502 Bad Gateway: upstream down`,
		},
		{
			name:   "error event mid-stream",
			stream: true,
			reply: sse(
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"partial answer"}]}}]}`,
				`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			),
			wantPartials: 1, wantCode: 503, wantStatus: "UNAVAILABLE", wantRetry: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeGemini(t, tt.reply)
			got, err := pt.CollectErr(newModel(t, fake, "gemini-test").Generate(t.Context(), pt.HelloRequest(), tt.stream))
			if len(got) != tt.wantPartials {
				t.Errorf("got %d responses before the error, want %d", len(got), tt.wantPartials)
			}
			for _, r := range got {
				if !r.Partial {
					t.Errorf("complete response before the error: %s", pt.ShowResponse(r))
				}
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v (%T), want *APIError", err, err)
			}
			if apiErr.Code != tt.wantCode || apiErr.Status != tt.wantStatus || apiErr.Model != "gemini-test" {
				t.Errorf("APIError code %d status %q model %q, want %d %q gemini-test", apiErr.Code, apiErr.Status, apiErr.Model, tt.wantCode, tt.wantStatus)
			}
			if apiErr.Retryable() != tt.wantRetry {
				t.Errorf("Retryable() = %v, want %v", apiErr.Retryable(), tt.wantRetry)
			}
			if tt.wantText != "" && err.Error() != tt.wantText {
				t.Errorf("error text %q, want %q", err.Error(), tt.wantText)
			}
			// The genai error stays reachable for callers that know it.
			var gErr genai.APIError
			if !errors.As(err, &gErr) || gErr.Code != tt.wantCode {
				t.Errorf("errors.As(genai.APIError) = %v, code %d", errors.As(err, &gErr), gErr.Code)
			}
		})
	}
}

// TestGenerateCancel checks that cancelling ctx aborts the HTTP call, both
// while a stream hangs after its first chunk and while a unary call waits
// for its answer.
func TestGenerateCancel(t *testing.T) {
	t.Run("stream", func(t *testing.T) {
		hang := newBlocking(`{"candidates":[{"content":{"role":"model","parts":[{"text":"first"}]}}]}`)
		fake := newFakeGemini(t, hang.reply)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()

		var got []*model.Response
		var gotErr error
		for r, err := range newModel(t, fake, "gemini-test").Generate(ctx, pt.HelloRequest(), true) {
			if err != nil {
				gotErr = err
				break
			}
			got = append(got, r)
			// The server now hangs; cancel while the client waits for more.
			cancel()
		}
		if len(got) != 1 || !got[0].Partial {
			t.Errorf("responses before cancel: %d, want 1 partial", len(got))
		}
		if !errors.Is(gotErr, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", gotErr)
		}
		waitClosed(t, hang.aborted, "the server never saw the request aborted")
	})
	t.Run("unary", func(t *testing.T) {
		hang := newBlocking()
		fake := newFakeGemini(t, hang.reply)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			<-hang.started
			cancel()
		}()
		_, err := pt.CollectErr(newModel(t, fake, "gemini-test").Generate(ctx, pt.HelloRequest(), false))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		waitClosed(t, hang.aborted, "the server never saw the request aborted")
	})
	t.Run("consumer stops early", func(t *testing.T) {
		hang := newBlocking(`{"candidates":[{"content":{"role":"model","parts":[{"text":"first"}]}}]}`)
		fake := newFakeGemini(t, hang.reply)
		n := 0
		for range newModel(t, fake, "gemini-test").Generate(t.Context(), pt.HelloRequest(), true) {
			n++
			break
		}
		if n != 1 {
			t.Errorf("got %d responses, want 1", n)
		}
		// Breaking out of the loop must release the connection, not leave
		// the request running until the test ends.
		waitClosed(t, hang.aborted, "the request kept running after the consumer stopped")
	})
}

// waitClosed waits for ch. The bound only turns a hang into a failure
// message; nothing here depends on timing.
func waitClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal(msg)
	}
}

// TestGenerateMalformed checks that responses the genai client chokes on
// (it panics on a null candidate) fail the call instead of the process.
func TestGenerateMalformed(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		reply  reply
	}{
		{name: "null candidate", reply: unary(`{"candidates":[null]}`)},
		{name: "null candidate, stream", stream: true, reply: sse(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`, `{"candidates":[null]}`)},
		{name: "not JSON", reply: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }},
		{name: "not JSON, stream", stream: true, reply: sse(`{"candidates":`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeGemini(t, tt.reply)
			resps, err := pt.CollectErr(newModel(t, fake, "gemini-test").Generate(t.Context(), pt.HelloRequest(), tt.stream))
			if err == nil {
				t.Fatalf("no error; responses: %v", resps)
			}
			for _, r := range resps {
				if !r.Partial {
					t.Errorf("complete response before the error: %s", pt.ShowResponse(r))
				}
			}
			var apiErr *APIError
			if errors.As(err, &apiErr) {
				t.Errorf("error %v is an *APIError; the API did not send one", err)
			}
			if !strings.Contains(err.Error(), `gemini model "gemini-test"`) {
				t.Errorf("error %q does not name the model", err)
			}
		})
	}
}

func TestGenerateNilRequest(t *testing.T) {
	fake := newFakeGemini(t, unary(okBody))
	_, err := pt.CollectErr(newModel(t, fake, "gemini-test").Generate(t.Context(), nil, false))
	if err == nil {
		t.Fatal("no error for a nil request")
	}
	if len(fake.Seen()) != 0 {
		t.Errorf("a nil request reached the server")
	}
}
