package server

import (
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// rawCodec sends and receives message bytes as they are, so that a test
// can put on the wire what no generated client would encode.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// nestedValue encodes a google.protobuf.Value holding a struct nested
// depth levels deep: {"a": {"a": ... }}.
func nestedValue(depth int) []byte {
	var v []byte // the innermost Value: empty
	for range depth {
		entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "a") // MapEntry.key
		entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), v)   // MapEntry.value
		st := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry)   // Struct.fields
		v = protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), st)        // Value.struct_value
	}
	return v
}

// TestUndecodableRequestsAreInvalidArgument: requests grpc-go's decoder
// refuses (invalid UTF-8 in a string, nesting past its limit) reach the
// client as InvalidArgument on unary and streaming RPCs, nothing is
// written, and the server goes on serving well-formed requests.
func TestUndecodableRequestsAreInvalidArgument(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, llmApp))
	ctx := t.Context()
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	// CreateSessionRequest: app_name 1, user_id 2, session_id 3, state 4.
	badUTF8 := append(append(str(1, "app"), str(2, "u\xff\xfe")...), str(3, "s1")...)
	state := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), append(str(1, "k"), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), nestedValue(10050))...))
	tooDeep := append(append(append(str(1, "app"), str(2, "u")...), str(3, "s2")...), protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), state)...)
	for name, req := range map[string][]byte{"invalid UTF-8": badUTF8, "nested past the limit": tooDeep} {
		var resp []byte
		err := e.conn.Invoke(ctx, "/agentrunner.service.v1.SessionService/CreateSession", &req, &resp, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "could not be decoded") {
			t.Fatalf("%s: CreateSession = %v, want InvalidArgument saying the request could not be decoded", name, err)
		}
	}
	list, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app"})
	if err != nil || len(list.GetSessions()) != 0 {
		t.Fatalf("sessions after refused creates: %v, %v", list.GetSessions(), err)
	}

	// A server-streaming RPC: Run with invalid UTF-8 in the message text.
	e.createSession(t, "llm", "u", "s")
	part := str(1, "hi \xff")                                                                                           // Part.text
	content := append(str(1, "user"), protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), part)...) // Content: role, parts
	run := append(append(append(str(1, "llm"), str(2, "u")...), str(3, "s")...), protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), content)...)
	desc := &grpc.StreamDesc{StreamName: "Run", ServerStreams: true}
	stream, err := e.conn.NewStream(ctx, desc, "/agentrunner.service.v1.RunnerService/Run", grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&run); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var msg []byte
	if err := stream.RecvMsg(&msg); status.Code(err) != codes.InvalidArgument || err == io.EOF {
		t.Fatalf("Run with invalid UTF-8 = %v, want InvalidArgument", err)
	}
	// Nothing was stored, and well-formed requests are served as before.
	got, err := e.sessions.GetSession(context.Background(), &servicev1.GetSessionRequest{AppName: "llm", UserId: "u", SessionId: "s"})
	if err != nil || len(got.GetEvents()) != 0 {
		t.Fatalf("GetSession after the refused run: %d events, %v", len(got.GetEvents()), err)
	}
}
