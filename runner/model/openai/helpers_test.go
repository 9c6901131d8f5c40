package openai

import (
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

// collectErr drains seq and returns the responses before the error, and
// the error. It checks the contract that an error ends the sequence.
func collectErr(seq iter.Seq2[*model.Response, error]) ([]*model.Response, error) {
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

func collect(t *testing.T, seq iter.Seq2[*model.Response, error]) []*model.Response {
	t.Helper()
	resps, err := collectErr(seq)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return resps
}

// diffResponses describes how got differs from want, or returns "".
func diffResponses(got, want []*model.Response) string {
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
			fmt.Fprintf(&b, "got[%d] = %s\n", i, showResponse(r))
		}
	}
	return b.String()
}

func diffResponse(got, want *model.Response) string {
	var d []string
	if !proto.Equal(got.Content, want.Content) {
		d = append(d, fmt.Sprintf("content {%s}, want {%s}", prototext.Format(got.Content), prototext.Format(want.Content)))
	}
	if !proto.Equal(got.Usage, want.Usage) {
		d = append(d, fmt.Sprintf("usage {%s}, want {%s}", prototext.Format(got.Usage), prototext.Format(want.Usage)))
	}
	if !proto.Equal(got.Citations, want.Citations) {
		d = append(d, fmt.Sprintf("citations {%s}, want {%s}", prototext.Format(got.Citations), prototext.Format(want.Citations)))
	}
	if got.Interrupted != want.Interrupted {
		d = append(d, fmt.Sprintf("interrupted %v, want %v", got.Interrupted, want.Interrupted))
	}
	check := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s %v, want %v", name, g, w))
		}
	}
	check("Partial", got.Partial, want.Partial)
	check("TurnComplete", got.TurnComplete, want.TurnComplete)
	check("FinishReason", got.FinishReason, want.FinishReason)
	check("ErrorCode", got.ErrorCode, want.ErrorCode)
	if want.ErrorMessage != "" && !strings.Contains(got.ErrorMessage, want.ErrorMessage) {
		d = append(d, fmt.Sprintf("ErrorMessage %q, want it to contain %q", got.ErrorMessage, want.ErrorMessage))
	}
	check("ModelVersion", got.ModelVersion, want.ModelVersion)
	return strings.Join(d, "; ")
}

func showResponse(r *model.Response) string {
	if r == nil {
		return "nil"
	}
	return fmt.Sprintf("{partial=%v complete=%v finish=%q err=%q/%q version=%q content={%s} usage={%s}}",
		r.Partial, r.TurnComplete, r.FinishReason, r.ErrorCode, r.ErrorMessage, r.ModelVersion,
		prototext.Format(r.Content), prototext.Format(r.Usage))
}

func text(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

func modelContent(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "model", Parts: parts}
}

func userContent(parts ...*agentrunnerv1.Part) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: parts}
}

// call builds a function call part from literals; a table with arguments
// structpb refuses is a bug in the test, hence the panic.
func call(id, name string, args map[string]any) *agentrunnerv1.Part {
	s, err := structpb.NewStruct(args)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: s}}}
}

func funcResponse(id, name string, resp map[string]any) *agentrunnerv1.Part {
	s, err := structpb.NewStruct(resp)
	if err != nil {
		panic(err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: s}}}
}

func partial(version, s string) *model.Response {
	return &model.Response{Content: modelContent(text(s)), Partial: true, ModelVersion: version}
}

func helloRequest() *model.Request {
	return &model.Request{Contents: []*agentrunnerv1.Content{userContent(text("say hello"))}}
}
