package gemini

import (
	"testing"

	"google.golang.org/genai"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// allParts has one part of every kind, with the optional fields set.
func allParts(t *testing.T) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
		pt.Text("answer"),
		thoughtPart("reasoning", "sig-t"),
		signed(pt.Text(""), "sig-empty"),
		{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: []byte{0, 1, 2}, DisplayName: "a.png"}}},
		{Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{MimeType: "text/plain", FileUri: "gs://b/f.txt", DisplayName: "f"}}},
		signed(pt.Call("id-1", "lookup", map[string]any{"q": "x", "n": 3.5, "tags": []any{"a", nil}, "nested": map[string]any{"b": true}}), "sig-c"),
		{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "id-2", Name: "no_args"}}},
		{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: "empty_args", Args: &structpb.Struct{}}}},
		{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
			Id: "id-1", Name: "lookup", Response: mustStruct(t, map[string]any{"error": "not found"}),
		}}},
	}}
}

// TestContentRoundTrip checks that a Content survives the trip to genai and
// back unchanged, which is what lets a stored conversation be replayed to
// the model turn after turn.
func TestContentRoundTrip(t *testing.T) {
	in := allParts(t)
	gc := toGenaiContent(in, genai.BackendVertexAI)
	out, err := fromGenaiContent(gc)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, out) {
		t.Errorf("round trip changed the content:\n in: %s\nout: %s", prototext.Format(in), prototext.Format(out))
	}
	// The genai side must not alias our bytes: the runner may reuse them.
	gc.Parts[3].InlineData.Data[0] = 9
	if in.Parts[3].GetInlineData().GetData()[0] != 0 {
		t.Error("genai part shares inline data with the input")
	}
}

// TestContentToGeminiAPI checks what is adjusted for the Gemini Developer
// API: display names removed, empty roles sent as user, empty parts dropped.
func TestContentToGeminiAPI(t *testing.T) {
	in := allParts(t)
	in.Role = ""
	in.Parts = append(in.Parts, nil, &agentrunnerv1.Part{})
	gc := toGenaiContent(in, genai.BackendGeminiAPI)
	if gc.Role != "user" {
		t.Errorf("role %q, want user", gc.Role)
	}
	if got, want := len(gc.Parts), len(allParts(t).Parts); got != want {
		t.Errorf("%d parts, want %d (nil and empty parts dropped)", got, want)
	}
	if gc.Parts[3].InlineData.DisplayName != "" || gc.Parts[4].FileData.DisplayName != "" {
		t.Error("display names sent to the Gemini Developer API")
	}
	if gc.Parts[7].FunctionCall.Args == nil {
		t.Error("an empty args Struct became nil")
	}
	if gc.Parts[6].FunctionCall.Args != nil {
		t.Error("absent args became non-nil")
	}
}

func TestFromGenaiPartEdgeCases(t *testing.T) {
	tests := []struct {
		name string
		in   *genai.Part
		want *agentrunnerv1.Part
	}{
		{name: "nil", in: nil, want: nil},
		{name: "empty", in: &genai.Part{}, want: nil},
		{name: "executable code", in: &genai.Part{ExecutableCode: &genai.ExecutableCode{Code: "1"}}, want: nil},
		{name: "empty thought", in: &genai.Part{Thought: true}, want: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{}, Thought: true}},
		{
			name: "function call without args",
			in:   &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}},
			want: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: "f"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fromGenaiPart(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFromGenaiPartBadArgs checks that args a Struct cannot hold are an
// error, not a panic.
func TestFromGenaiPartBadArgs(t *testing.T) {
	_, err := fromGenaiPart(&genai.Part{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{"c": make(chan int)}}})
	if err == nil {
		t.Error("no error for args that are not JSON values")
	}
}
