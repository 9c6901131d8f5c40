package server

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// responses are RunResponses of every payload, with the fields a run
// sets: maps, structs, oneofs, timestamps, a large text that the codec
// takes from grpc-go's buffer pool.
func responses(t testing.TB) []*servicev1.RunResponse {
	args, err := structpb.NewStruct(map[string]any{"order_id": "42", "n": 3.5, "tags": []any{"a", true, nil}})
	if err != nil {
		t.Fatal(err)
	}
	ev := &agentrunnerv1.Event{
		Id: "ev1", InvocationId: "e-1", Author: "clerk", Branch: "root.clerk", Timestamp: timestamppb.Now(), Sequence: 7,
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{
			{Data: &agentrunnerv1.Part_Text{Text: "hello"}},
			{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "get_order", Args: args}}},
		}},
		TurnComplete:  true,
		Actions:       &agentrunnerv1.EventActions{StateDelta: args, ArtifactDelta: map[string]int64{"a.txt": 2, "b.png": 1}, TransferToAgent: "billing"},
		UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 2, TotalTokenCount: 12},
		Cost:          &agentrunnerv1.Cost{Currency: "USD", Micros: 123, Model: "priced"},
		FinishReason:  "STOP", ModelVersion: "offline", CustomMetadata: args,
	}
	partial := &agentrunnerv1.Event{Id: "p1", InvocationId: "e-1", Author: "clerk", Partial: true, Timestamp: timestamppb.Now(),
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "word "}}}}}
	big := proto.CloneOf(partial)
	big.Content.Parts[0].Data = &agentrunnerv1.Part_Text{Text: strings.Repeat("long answer ", 4000)}
	run := &agentrunnerv1.Run{RunId: "e-1", AppName: "a", UserId: "u", SessionId: "s", Status: agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED,
		Usage: ev.UsageMetadata, UsageByAgent: map[string]*agentrunnerv1.UsageMetadata{"clerk": ev.UsageMetadata, "billing": {TotalTokenCount: 1}},
		Cost: ev.Cost, Error: &agentrunnerv1.Status{Code: 8, Message: "budget"}, CreateTime: timestamppb.Now()}
	return []*servicev1.RunResponse{
		{Payload: &servicev1.RunResponse_Event{Event: ev}},
		{Payload: &servicev1.RunResponse_Event{Event: partial}},
		{Payload: &servicev1.RunResponse_Event{Event: big}},
		{Payload: &servicev1.RunResponse_Run{Run: run}},
		{Payload: &servicev1.RunResponse_Error{Error: &agentrunnerv1.Status{Code: 2, Message: "agent x: failed"}}},
	}
}

// TestCodecMarshalsWithGeneratedCode: what the codec writes with the
// generated marshalers decodes, with the proto runtime, to the message it
// was given, is as long as proto.Marshal's, and a message without them
// (health, reflection) still goes through.
func TestCodecMarshalsWithGeneratedCode(t *testing.T) {
	c := newRequestCodec()
	for i, r := range responses(t) {
		if _, ok := any(r).(vtMessage); !ok {
			t.Fatal("RunResponse has no generated marshalers: gen/go lacks *_vtproto.pb.go")
		}
		data, err := c.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b := data.Materialize()
		data.Free()
		got := &servicev1.RunResponse{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if !proto.Equal(got, r) || len(b) != proto.Size(r) {
			t.Fatalf("response %d: decoded %v (%d bytes), want %v (%d bytes)", i, got, len(b), r, proto.Size(r))
		}
	}
	plain := &structpb.Value{Kind: &structpb.Value_StringValue{StringValue: "no generated code"}}
	data, err := c.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	got := &structpb.Value{}
	if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, plain) {
		t.Fatalf("a message without generated code: %v, %v", got, err)
	}
}

// BenchmarkResponseMarshal: encoding a streamed chunk and a complete
// answer with the runtime's proto.Marshal, with grpc-go's proto codec
// (what the server used before), and with this server's codec, which
// uses the generated marshalers.
func BenchmarkResponseMarshal(b *testing.B) {
	rs := responses(b)
	for _, tc := range []struct {
		name string
		r    *servicev1.RunResponse
	}{{"partial", rs[1]}, {"complete", rs[0]}} {
		b.Run(tc.name+"/proto.Marshal", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := proto.Marshal(tc.r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/grpc-codec", func(b *testing.B) {
			c := newRequestCodec().base
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.Marshal(tc.r)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
		b.Run(tc.name+"/codec", func(b *testing.B) {
			c := newRequestCodec()
			b.ReportAllocs()
			for b.Loop() {
				data, err := c.Marshal(tc.r)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
