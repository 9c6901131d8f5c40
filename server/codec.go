package server

import (
	"context"
	"strings"

	"github.com/agentrunner/agentrunner/server/internal/front"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// grpc-go turns any error of its codec's Unmarshal into Internal, before
// a handler or an interceptor sees the request: a request with invalid
// UTF-8 in a string, or nested past the decoder's limit, would reach the
// client as a server fault. requestCodec keeps grpc-go's proto codec but
// does not fail there: it leaves the message empty, marked with the
// decoder's error in an unknown field, and the interceptors (decodeUnary,
// decodeStream) refuse a marked request with InvalidArgument. The
// generated code stays as it is.

// decodeErrorField is the field number of the mark: the largest a field
// can have, which no agentrunner message uses. A client sending it itself
// gets what it asked for, an InvalidArgument.
const decodeErrorField = protowire.MaxValidNumber

// requestCodec is the proto codec with decode errors deferred to the
// interceptors.
type requestCodec struct{ base encoding.CodecV2 }

func newRequestCodec() requestCodec { return requestCodec{base: encoding.GetCodecV2("proto")} }

func (c requestCodec) Name() string { return c.base.Name() }

// vtMessage is a message with generated fast marshalers (vtprotobuf's
// marshal and size features, in gen/go/*_vtproto.pb.go): every message of
// this module's services.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT(dAtA []byte) (int, error)
}

// Marshal encodes responses with their generated marshalers, which skip
// the reflection the proto runtime walks for every message: a streamed
// answer is one RunResponse per chunk, and encoding them was a sixth of
// the server's CPU on streamed runs (BenchmarkResponseMarshal). Buffers
// come from grpc-go's pool as its own proto codec takes them; anything
// else (health, reflection) goes to that codec.
func (c requestCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMessage)
	if !ok {
		return c.base.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		// The slice of one buffer and the buffer, as an interface, are
		// one allocation (a streamed partial event is one such message):
		// a pointer to the SliceBuffer in it is a Buffer too.
		s := &struct {
			buf   mem.SliceBuffer
			slice [1]mem.Buffer
		}{buf: make([]byte, size)}
		if _, err := m.MarshalToSizedBufferVT(s.buf); err != nil {
			return nil, err
		}
		s.slice[0] = &s.buf
		return s.slice[:], nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVT((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	proto.Reset(m)
	mark := protowire.AppendTag(nil, decodeErrorField, protowire.BytesType)
	m.ProtoReflect().SetUnknown(protowire.AppendString(mark, err.Error()))
	return nil
}

// decodeError returns the InvalidArgument a request marked by
// requestCodec stands for, or nil.
func decodeError(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	for u := m.ProtoReflect().GetUnknown(); len(u) > 0; {
		num, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return nil
		}
		u = u[n:]
		if num == decodeErrorField && typ == protowire.BytesType {
			msg, _ := protowire.ConsumeString(u)
			// The decoder's words name the Go package; the client needs
			// what was wrong.
			msg = strings.TrimPrefix(msg, "proto: ")
			return status.Errorf(codes.InvalidArgument, "the request could not be decoded: %s", msg)
		}
		m := protowire.ConsumeFieldValue(num, typ, u)
		if m < 0 {
			return nil
		}
		u = u[m:]
	}
	return nil
}

// decodeUnary refuses a request requestCodec could not decode, and one
// holding a Value JSON cannot carry (see valueChecker).
func decodeUnary(vc *front.ValueChecker) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := requestError(vc, req); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// decodeStream refuses, on the stream, each message requestCodec could
// not decode or that holds a Value JSON cannot carry.
func decodeStream(vc *front.ValueChecker) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, decodingStream{ss, vc})
	}
}

type decodingStream struct {
	grpc.ServerStream
	vc *front.ValueChecker
}

func (s decodingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return requestError(s.vc, m)
}

// requestError is decodeError, then the valueChecker's verdict.
func requestError(vc *front.ValueChecker, req any) error {
	if err := decodeError(req); err != nil {
		return err
	}
	if m, ok := req.(proto.Message); ok {
		return vc.Check(m.ProtoReflect())
	}
	return nil
}
