package openai

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

const fakeVersion = "gpt-fake-2026-01-01"

// generateCases are Chat Completions answers and the responses Generate
// must make of them.
var generateCases = []pt.GenerateCase{
	{
		Name:  "text",
		Reply: pt.JSON(`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("Hello!")), TurnComplete: true, FinishReason: "STOP", ModelVersion: fakeVersion,
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 9, CandidatesTokenCount: 3, TotalTokenCount: 12},
		}},
	},
	{
		// Reasoning tokens move from the completion count to thoughts;
		// cached tokens stay inside the prompt count.
		Name:  "usage details",
		Reply: pt.JSON(`{"id":"c1","object":"chat.completion","created":1,"model":"o-fake","choices":[{"index":0,"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":30,"total_tokens":130,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":20}}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("42")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "o-fake",
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 100, CandidatesTokenCount: 10, ThoughtsTokenCount: 20, CachedContentTokenCount: 64, TotalTokenCount: 130},
		}},
	},
	{
		// Web search models cite pages by span; the tier and the
		// per-modality counts are kept.
		Name:  "citations, tier and modalities",
		Reply: pt.JSON(`{"id":"c5","object":"chat.completion","created":1,"model":"gpt-fake-search","service_tier":"default","choices":[{"index":0,"message":{"role":"assistant","content":"Oslo is cold.","annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":4,"url":"https://example.com/oslo","title":"Oslo"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,"prompt_tokens_details":{"text_tokens":40,"audio_tokens":10,"cache_write_tokens":8},"completion_tokens_details":{"text_tokens":5}}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(pt.Text("Oslo is cold.")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "gpt-fake-search",
			Citations: &agentrunnerv1.CitationMetadata{Citations: []*agentrunnerv1.Citation{{StartIndex: 0, EndIndex: 4, Uri: "https://example.com/oslo", Title: "Oslo"}}},
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 50, CandidatesTokenCount: 5, TotalTokenCount: 55, CacheCreationTokenCount: 8, TrafficType: "DEFAULT",
				PromptTokensDetails:     []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 40}, {Modality: "AUDIO", TokenCount: 10}},
				CandidatesTokensDetails: []*agentrunnerv1.ModalityTokenCount{{Modality: "TEXT", TokenCount: 5}}},
		}},
	},
	{
		// The SDK's delta type has no annotations; they are read from
		// the chunk all the same.
		Name:   "stream citations",
		Stream: true,
		Reply: sse.Answer(
			`{"id":"c6","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Oslo"},"finish_reason":null}]}`,
			`{"id":"c6","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"annotations":[{"type":"url_citation","url_citation":{"start_index":0,"end_index":4,"url":"https://example.com/oslo","title":"Oslo"}}]},"finish_reason":"stop"}]}`,
		),
		Want: []*model.Response{
			pt.Partial("m", "Oslo"),
			{
				Content: pt.ModelContent(pt.Text("Oslo")), TurnComplete: true, FinishReason: "STOP", ModelVersion: "m",
				Citations: &agentrunnerv1.CitationMetadata{Citations: []*agentrunnerv1.Citation{{StartIndex: 0, EndIndex: 4, Uri: "https://example.com/oslo", Title: "Oslo"}}},
			},
		},
	},
	{
		Name:  "parallel tool calls",
		Reply: pt.JSON(`{"id":"c2","object":"chat.completion","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":10,"total_tokens":30}}`),
		Want: []*model.Response{{
			Content: pt.ModelContent(
				pt.Call("call_a", "get_weather", map[string]any{"city": "Paris"}),
				pt.Call("call_b", "get_weather", map[string]any{"city": "Oslo"})),
			TurnComplete: true, FinishReason: "STOP", ModelVersion: fakeVersion,
			Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 20, CandidatesTokenCount: 10, TotalTokenCount: 30},
		}},
	},
	{
		Name:   "stream text",
		Stream: true,
		Reply: sse.Answer(
			`{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			`{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
			`{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"delta":{"content":"lo, world"},"finish_reason":null}]}`,
			`{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-fake-2026-01-01","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c3","object":"chat.completion.chunk","created":1,"model":"gpt-fake-2026-01-01","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`,
		),
		Want: []*model.Response{
			pt.Partial(fakeVersion, "Hel"),
			pt.Partial(fakeVersion, "lo, world"),
			{
				Content: pt.ModelContent(pt.Text("Hello, world")), TurnComplete: true, FinishReason: "STOP", ModelVersion: fakeVersion,
				Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 5, CandidatesTokenCount: 4, TotalTokenCount: 9},
			},
		},
	},
	{
		// Parallel calls arrive interleaved by index, their arguments in
		// pieces; only the complete response carries them, whole.
		Name:   "stream parallel tool calls",
		Stream: true,
		Reply: sse.Answer(
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking."},"finish_reason":null}]}`,
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`,
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]},"finish_reason":null}]}`,
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]}`,
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}},{"index":1,"function":{"arguments":"\"CET\"}"}}]},"finish_reason":null}]}`,
			`{"id":"c4","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		),
		Want: []*model.Response{
			pt.Partial("m", "Checking."),
			{
				Content: pt.ModelContent(pt.Text("Checking."),
					pt.Call("call_1", "get_weather", map[string]any{"city": "Oslo"}),
					pt.Call("call_2", "get_time", map[string]any{"tz": "CET"})),
				TurnComplete: true, FinishReason: "STOP", ModelVersion: "m",
			},
		},
	},
	{
		Name:   "length keeps the truncated answer",
		Stream: true,
		Reply: sse.Answer(
			`{"id":"c5","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"The answer is"},"finish_reason":null}]}`,
			`{"id":"c5","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
		),
		Want: []*model.Response{
			pt.Partial("m", "The answer is"),
			{Content: pt.ModelContent(pt.Text("The answer is")), TurnComplete: true, FinishReason: "MAX_TOKENS", ModelVersion: "m",
				ErrorCode: "MAX_TOKENS", ErrorMessage: "maximum number of output tokens"},
		},
	},
	{
		Name:  "content filter",
		Reply: pt.JSON(`{"id":"c6","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"}]}`),
		Want: []*model.Response{{Content: pt.ModelContent(), TurnComplete: true, FinishReason: "SAFETY", ModelVersion: "m",
			ErrorCode: "SAFETY", ErrorMessage: "content filter"}},
	},
	{
		Name:  "refusal",
		Reply: pt.JSON(`{"id":"c7","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`),
		Want: []*model.Response{{Content: pt.ModelContent(pt.Text("I can't help with that.")), TurnComplete: true, FinishReason: "SAFETY", ModelVersion: "m",
			ErrorCode: "SAFETY", ErrorMessage: "the model refused: I can't help with that."}},
	},
	{
		Name:  "malformed call arguments",
		Reply: pt.JSON(`{"id":"c8","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_x","type":"function","function":{"name":"f","arguments":"{not json"}}]},"finish_reason":"tool_calls"}]}`),
		Want: []*model.Response{{Content: pt.ModelContent(), TurnComplete: true, FinishReason: "MALFORMED_FUNCTION_CALL", ModelVersion: "m",
			ErrorCode: "MALFORMED_FUNCTION_CALL", ErrorMessage: `call to "f" are not a JSON object`}},
	},
}

// TestGenerate runs each answer through the real SDK: one request, to
// the Chat Completions path with the Config's key.
func TestGenerate(t *testing.T) {
	pt.RunGenerate(t, provider, generateCases, func(t *testing.T, r pt.Request, stream bool) {
		if auth := r.Header.Get("Authorization"); r.Path != "/v1/chat/completions" || auth != "Bearer "+pt.APIKey {
			t.Errorf("request %s with Authorization %q, want /v1/chat/completions with the Config's key", r.Path, auth)
		}
		if got := r.Body["stream"]; (got == true) != stream {
			t.Errorf("body stream = %v, want %v", got, stream)
		}
	})
}
