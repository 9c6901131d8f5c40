package web

import (
	"fmt"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// jsonCodec is vanguard's JSON codec whose decoding errors are the
// caller's (InvalidArgument): vanguard passes a codec's error on as it is,
// which Connect clients then see as "unknown", while the gRPC port's
// codec answers a malformed request with InvalidArgument.
type jsonCodec struct{ *vanguard.JSONCodec }

func newJSONCodec(res vanguard.TypeResolver) vanguard.Codec {
	return jsonCodec{vanguard.NewJSONCodec(res)}
}

func (c jsonCodec) Unmarshal(data []byte, msg proto.Message) error {
	return invalidRequest(c.JSONCodec.Unmarshal(data, msg))
}

func (c jsonCodec) UnmarshalField(data []byte, msg proto.Message, field protoreflect.FieldDescriptor) error {
	return invalidRequest(c.JSONCodec.UnmarshalField(data, msg, field))
}

func invalidRequest(err error) error {
	if err == nil {
		return nil
	}
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the request could not be decoded: %w", err))
}
