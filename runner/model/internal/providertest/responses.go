package providertest

import (
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// CollectErr drains seq and returns the responses before the error, and
// the error. It checks the contract that an error ends the sequence.
func CollectErr(seq iter.Seq2[*model.Response, error]) ([]*model.Response, error) {
	var resps []*model.Response
	var firstErr error
	for r, err := range seq {
		if firstErr != nil {
			return resps, fmt.Errorf("sequence went on after error %v", firstErr)
		}
		if err != nil {
			firstErr = err
			continue
		}
		resps = append(resps, r)
	}
	return resps, firstErr
}

// Collect drains seq, failing the test on an error.
func Collect(t testing.TB, seq iter.Seq2[*model.Response, error]) []*model.Response {
	t.Helper()
	resps, err := CollectErr(seq)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resps
}

// DiffResponses describes how got differs from want, or returns "".
func DiffResponses(got, want []*model.Response) string {
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "got %d responses, want %d\n", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if d := diffResponse(got[i], want[i]); d != "" {
			fmt.Fprintf(&b, "response %d: %s\n", i, d)
		}
	}
	if b.Len() > 0 {
		for i, r := range got {
			fmt.Fprintf(&b, "got[%d] = %s\n", i, ShowResponse(r))
		}
	}
	return b.String()
}

// diffResponse compares every field a provider fills. An ErrorMessage is
// compared by containment: want names what matters, the provider may say
// more; an empty want means none.
func diffResponse(got, want *model.Response) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("got %v, want %v", got, want)
		}
		return ""
	}
	var d []string
	diffProto := func(name string, g, w proto.Message) {
		if !proto.Equal(g, w) {
			d = append(d, fmt.Sprintf("%s {%s}, want {%s}", name, prototext.Format(g), prototext.Format(w)))
		}
	}
	diffProto("content", got.Content, want.Content)
	diffProto("usage", got.Usage, want.Usage)
	diffProto("citations", got.Citations, want.Citations)
	check := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %v, want %v", name, g, w))
		}
	}
	check("Interrupted", got.Interrupted, want.Interrupted)
	check("Partial", got.Partial, want.Partial)
	check("TurnComplete", got.TurnComplete, want.TurnComplete)
	check("FinishReason", got.FinishReason, want.FinishReason)
	check("ErrorCode", got.ErrorCode, want.ErrorCode)
	if !strings.Contains(got.ErrorMessage, want.ErrorMessage) || (want.ErrorMessage == "" && got.ErrorMessage != "") {
		d = append(d, fmt.Sprintf("ErrorMessage %q, want it to contain %q", got.ErrorMessage, want.ErrorMessage))
	}
	check("ModelVersion", got.ModelVersion, want.ModelVersion)
	return strings.Join(d, "; ")
}

// ShowResponse formats r for a failure message.
func ShowResponse(r *model.Response) string {
	if r == nil {
		return "nil"
	}
	return fmt.Sprintf("{partial=%v complete=%v finish=%q err=%q/%q version=%q content={%s} usage={%s}}",
		r.Partial, r.TurnComplete, r.FinishReason, r.ErrorCode, r.ErrorMessage, r.ModelVersion,
		prototext.Format(r.Content), prototext.Format(r.Usage))
}

// TextOf returns the text of r's parts, joined.
func TextOf(r *model.Response) string {
	var b strings.Builder
	for _, p := range r.Content.GetParts() {
		b.WriteString(p.GetText())
	}
	return b.String()
}

// Text is a text part.
func Text(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// ModelContent is a model turn of parts.
func ModelContent(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "model", Parts: parts}
}

// UserContent is a user turn of parts.
func UserContent(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: parts}
}

// Call builds a function call part of a test table, from literals:
// arguments structpb refuses are a bug in the table, hence the panic.
func Call(id, name string, args map[string]any) *agentrunnerv1.Part {
	s, err := structpb.NewStruct(args)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: s}}}
}

// FuncResponse builds a function response part from literals, as Call.
func FuncResponse(id, name string, resp map[string]any) *agentrunnerv1.Part {
	s, err := structpb.NewStruct(resp)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: s}}}
}

// Partial is a streamed piece of text s from model version.
func Partial(version, s string) *model.Response {
	return &model.Response{Content: ModelContent(Text(s)), Partial: true, ModelVersion: version}
}

// HelloRequest is the smallest request: one user turn.
func HelloRequest() *model.Request {
	return &model.Request{Contents: []*agentrunnerv1.Content{UserContent(Text("say hello"))}}
}

// JSONEqual compares got (decoded JSON, as in Request.Body) with want (a
// JSON literal), reporting what differs.
func JSONEqual(t testing.TB, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want for %s: %v", what, err)
	}
	g, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(g) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, wb)
	}
}
