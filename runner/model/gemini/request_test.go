package gemini

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/genai"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

const okBody = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"modelVersion":"fake-model-001"}`

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// richRequest exercises every part kind, tools and every config field.
func richRequest(t *testing.T) *model.Request {
	temp, topP, topK := float32(0.25), float32(0.5), float32(40)
	budget := int32(128)
	return &model.Request{
		SystemInstruction: "You are terse.",
		Contents: []*agentrunnerv1.Content{
			{Role: "user", Parts: []*agentrunnerv1.Part{
				pt.Text("what is the weather in Paris?"),
				{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{
					MimeType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}, DisplayName: "map.png",
				}}},
				{Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{
					MimeType: "application/pdf", FileUri: "gs://bucket/report.pdf", DisplayName: "report",
				}}},
			}},
			nil, // dropped
			{Role: "model", Parts: []*agentrunnerv1.Part{
				{Data: &agentrunnerv1.Part_Text{Text: "I should call the tool."}, Thought: true},
				{
					Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{
						Id: "call-1", Name: "get_weather", Args: mustStruct(t, map[string]any{"city": "Paris", "days": 2}),
					}},
					ThoughtSignature: []byte("sig-1"),
				},
			}},
			{Role: "user", Parts: []*agentrunnerv1.Part{}}, // no parts: dropped
			{Parts: []*agentrunnerv1.Part{ // empty role is sent as user
				{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
					Id: "call-1", Name: "get_weather", Response: mustStruct(t, map[string]any{"forecast": []any{"sun", "rain"}, "ok": true}),
				}}},
			}},
		},
		Tools: []*model.FunctionDeclaration{
			{
				Name:        "get_weather",
				Description: "Returns the forecast.",
				Parameters: map[string]any{
					"type":       "object",
					"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
					"required":   []any{"city"},
				},
				Response: map[string]any{"type": "object"},
			},
			{Name: "no_args", Description: "Takes nothing."},
		},
		Config: &model.GenerateConfig{
			Temperature: &temp, TopP: &topP, TopK: &topK,
			MaxOutputTokens: 256, StopSequences: []string{"END"}, CandidateCount: 1,
			ResponseMIMEType: "text/plain", ThinkingBudget: &budget, IncludeThoughts: true,
		},
	}
}

// wantRichBody is what the Gemini Developer API must receive for
// richRequest. display_name is absent: that API does not accept it. The
// system instruction's role is added by genai.
const wantRichBody = `{
  "systemInstruction": {"role": "user", "parts": [{"text": "You are terse."}]},
  "contents": [
    {"role": "user", "parts": [
      {"text": "what is the weather in Paris?"},
      {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}},
      {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf"}}
    ]},
    {"role": "model", "parts": [
      {"text": "I should call the tool.", "thought": true},
      {"functionCall": {"id": "call-1", "name": "get_weather", "args": {"city": "Paris", "days": 2}}, "thoughtSignature": "c2lnLTE="}
    ]},
    {"role": "user", "parts": [
      {"functionResponse": {"id": "call-1", "name": "get_weather", "response": {"forecast": ["sun", "rain"], "ok": true}}}
    ]}
  ],
  "tools": [{"functionDeclarations": [
    {"name": "get_weather", "description": "Returns the forecast.",
     "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]},
     "responseJsonSchema": {"type": "object"}},
    {"name": "no_args", "description": "Takes nothing."}
  ]}],
  "generationConfig": {
    "temperature": 0.25, "topP": 0.5, "topK": 40, "maxOutputTokens": 256,
    "stopSequences": ["END"], "candidateCount": 1, "responseMimeType": "text/plain",
    "thinkingConfig": {"thinkingBudget": 128, "includeThoughts": true}
  }
}`

func TestRequestBody(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "unary", true: "stream"}[stream], func(t *testing.T) {
			fake := newFakeGemini(t, unary(okBody))
			m := newModel(t, fake, "gemini-test")
			pt.Collect(t, m.Generate(t.Context(), richRequest(t), stream))

			got := fake.Only(t)
			wantPath := "/v1beta/models/gemini-test:generateContent"
			if stream {
				wantPath = "/v1beta/models/gemini-test:streamGenerateContent"
			}
			if got.Method != "POST" || got.Path != wantPath {
				t.Errorf("request %s %s, want POST %s", got.Method, got.Path, wantPath)
			}
			if key := apiKey(got); key != pt.APIKey {
				t.Errorf("x-goog-api-key = %q, want %s", key, pt.APIKey)
			}
			var want map[string]any
			if err := json.Unmarshal([]byte(wantRichBody), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Body, want) {
				gotJSON, _ := json.MarshalIndent(got.Body, "", "  ")
				t.Errorf("request body:\n%s\nwant:\n%s", gotJSON, wantRichBody)
			}
		})
	}
}

// TestRequestModelOverride checks that Request.Model picks the model called
// and that a request without config, tools or instruction sends none.
func TestRequestModelOverride(t *testing.T) {
	fake := newFakeGemini(t, unary(okBody))
	m := newModel(t, fake, "gemini-default")
	req := &model.Request{
		Model:    "gemini-other",
		Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{pt.Text("hi")}}},
	}
	pt.Collect(t, m.Generate(t.Context(), req, false))

	got := fake.Only(t)
	if want := "/v1beta/models/gemini-other:generateContent"; got.Path != want {
		t.Errorf("path %s, want %s", got.Path, want)
	}
	want := map[string]any{
		"contents":         []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}},
		"generationConfig": map[string]any{}, // genai always sends one
	}
	if !reflect.DeepEqual(got.Body, want) {
		t.Errorf("body %v, want %v", got.Body, want)
	}
}

// TestRequestVertexKeepsDisplayName checks the one backend difference in
// what is sent: Vertex AI accepts display_name on inline and file data.
func TestRequestVertexKeepsDisplayName(t *testing.T) {
	fake := newFakeGemini(t, unary(okBody))
	m, err := New(t.Context(), "gemini-test", WithClientConfig(genai.ClientConfig{
		APIKey: "fake-key", Backend: genai.BackendVertexAI,
		HTTPOptions: genai.HTTPOptions{BaseURL: fake.URL},
	}))
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Contents: []*agentrunnerv1.Content{{Role: "user", Parts: []*agentrunnerv1.Part{
		{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "text/plain", Data: []byte("x"), DisplayName: "x.txt"}}},
	}}}}
	pt.Collect(t, m.Generate(t.Context(), req, false))

	got := fake.Only(t)
	if !strings.HasSuffix(got.Path, "/models/gemini-test:generateContent") {
		t.Errorf("path %s", got.Path)
	}
	want := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"inlineData": map[string]any{
		"mimeType": "text/plain", "data": "eA==", "displayName": "x.txt",
	}}}}}
	if !reflect.DeepEqual(got.Body["contents"], want) {
		t.Errorf("contents %v, want %v", got.Body["contents"], want)
	}
}
