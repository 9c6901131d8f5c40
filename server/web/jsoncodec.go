package web

import (
	"fmt"
	"math"

	"connectrpc.com/connect"
	"connectrpc.com/vanguard"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
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

// MarshalAppend encodes a response as JSON. A google.protobuf.Value the
// JSON mapping cannot represent (NaN, ±Infinity, no kind) fails the whole
// encoding, and with it a whole listing: the server no longer takes one
// (server.valueChecker), but a store written before may hold one. Such a
// response is encoded again with each of those Values rendered as JSON
// allows (see jsonSafe), instead of answering Unknown.
func (c jsonCodec) MarshalAppend(base []byte, msg proto.Message) ([]byte, error) {
	out, err := c.JSONCodec.MarshalAppend(base, msg)
	if err == nil {
		return out, nil
	}
	safe, changed := jsonSafe(msg)
	if !changed {
		return nil, err
	}
	return c.JSONCodec.MarshalAppend(base, safe)
}

// MarshalAppendStable is MarshalAppend's stable form.
func (c jsonCodec) MarshalAppendStable(base []byte, msg proto.Message) ([]byte, error) {
	out, err := c.JSONCodec.MarshalAppendStable(base, msg)
	if err == nil {
		return out, nil
	}
	safe, changed := jsonSafe(msg)
	if !changed {
		return nil, err
	}
	return c.JSONCodec.MarshalAppendStable(base, safe)
}

// jsonSafe returns a copy of msg whose Values all have a JSON mapping:
// NaN and ±Infinity become the strings "NaN", "Infinity" and
// "-Infinity" (how the JSON mapping writes a double field), a Value with
// no kind becomes null. changed is false when msg had none to render.
func jsonSafe(msg proto.Message) (proto.Message, bool) {
	c := proto.Clone(msg)
	return c, renderValues(c.ProtoReflect())
}

var valueName = (&structpb.Value{}).ProtoReflect().Descriptor().FullName()

func renderValues(m protoreflect.Message) bool {
	if m.Descriptor().FullName() == valueName {
		if v, ok := m.Interface().(*structpb.Value); ok && renderValue(v) {
			return true
		}
	}
	changed := false
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case f.IsMap() && f.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				changed = renderValues(mv.Message()) || changed
				return true
			})
		case f.IsList() && f.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				changed = renderValues(v.List().Get(i).Message()) || changed
			}
		case f.Message() != nil && !f.IsMap() && !f.IsList():
			changed = renderValues(v.Message()) || changed
		}
		return true
	})
	return changed
}

// renderValue replaces v's kind when JSON cannot carry it.
func renderValue(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case nil:
		v.Kind = &structpb.Value_NullValue{}
		return true
	case *structpb.Value_NumberValue:
		switch n := k.NumberValue; {
		case math.IsNaN(n):
			v.Kind = &structpb.Value_StringValue{StringValue: "NaN"}
		case math.IsInf(n, 1):
			v.Kind = &structpb.Value_StringValue{StringValue: "Infinity"}
		case math.IsInf(n, -1):
			v.Kind = &structpb.Value_StringValue{StringValue: "-Infinity"}
		default:
			return false
		}
		return true
	}
	return false
}
