package front

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// A google.protobuf.Value holding NaN or ±Infinity, or holding no kind at
// all, has no JSON mapping. The binary encodings carry it, so a gRPC
// client could store one in session state, a state delta or a call's
// arguments; from then on every JSON read of it (Connect, the console, an
// admin's listing of all users) failed as a whole. ValueChecker refuses
// such a request with InvalidArgument naming the field, wherever a
// Struct, Value or ListValue sits in it, for every method of the server
// (A2A's gRPC binding included).

var (
	valueName     = (&structpb.Value{}).ProtoReflect().Descriptor().FullName()
	structName    = (&structpb.Struct{}).ProtoReflect().Descriptor().FullName()
	listValueName = (&structpb.ListValue{}).ProtoReflect().Descriptor().FullName()
)

// ValueChecker finds Values the JSON mapping cannot represent. It
// remembers, per message type, whether that type can hold a Value at
// all, so that a request without one is not walked.
type ValueChecker struct {
	mu    sync.RWMutex
	holds map[protoreflect.FullName]bool
}

func NewValueChecker() *ValueChecker {
	return &ValueChecker{holds: map[protoreflect.FullName]bool{}}
}

// Check returns an InvalidArgument naming the first field of m whose
// Value has no JSON mapping, or nil.
func (c *ValueChecker) Check(m protoreflect.Message) error {
	if !c.canHold(m.Descriptor()) {
		return nil
	}
	if path, why := c.walk(m, nil); why != "" {
		return invalid(path, "%s, which JSON cannot carry: it is not stored", why)
	}
	return nil
}

// canHold reports whether a message of type md can contain a Value.
func (c *ValueChecker) canHold(md protoreflect.MessageDescriptor) bool {
	c.mu.RLock()
	h, ok := c.holds[md.FullName()]
	c.mu.RUnlock()
	if ok {
		return h
	}
	h = holdsValue(md, map[protoreflect.FullName]bool{})
	c.mu.Lock()
	c.holds[md.FullName()] = h
	c.mu.Unlock()
	return h
}

// holdsValue reports whether md, or a message it contains at any depth,
// is a Value, Struct or ListValue; seen breaks recursive types.
func holdsValue(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	switch md.FullName() {
	case valueName, structName, listValueName:
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if f.IsMap() {
			f = f.MapValue()
		}
		if f.Message() != nil && holdsValue(f.Message(), seen) {
			return true
		}
	}
	return false
}

// walk returns the path to the first unmappable Value under m (path is
// m's own), and why it is unmappable; "" when there is none.
func (c *ValueChecker) walk(m protoreflect.Message, path []string) (string, string) {
	switch m.Descriptor().FullName() {
	case valueName:
		return c.value(m, path)
	}
	var where, why string
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		sub := f.Message()
		if f.IsMap() {
			sub = f.MapValue().Message()
		}
		if sub == nil || !c.canHold(sub) {
			return true
		}
		p := append(path, fieldName(m, f))
		switch {
		case f.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				where, why = c.walk(mv.Message(), append(p, "["+strconv.Quote(k.String())+"]"))
				return why == ""
			})
		case f.IsList():
			l := v.List()
			for i := 0; i < l.Len() && why == ""; i++ {
				where, why = c.walk(l.Get(i).Message(), append(p, "["+strconv.Itoa(i)+"]"))
			}
		default:
			where, why = c.walk(v.Message(), p)
		}
		return why == ""
	})
	return where, why
}

// value checks one Value.
func (c *ValueChecker) value(m protoreflect.Message, path []string) (string, string) {
	od := m.Descriptor().Oneofs().ByName("kind")
	f := m.WhichOneof(od)
	if f == nil {
		return joinPath(path), "a Value with no kind (null, number, string, bool, struct or list)"
	}
	switch f.Name() {
	case "number_value":
		if n := m.Get(f).Float(); math.IsNaN(n) || math.IsInf(n, 0) {
			return joinPath(path), fmt.Sprintf("the number %v", n)
		}
	case "struct_value", "list_value":
		return c.walk(m.Get(f).Message(), path)
	}
	return "", ""
}

// fieldName names f inside m for a path: a Struct's fields map and a
// ListValue's values list are left out, so that a state key reads as
// state["key"].
func fieldName(m protoreflect.Message, f protoreflect.FieldDescriptor) string {
	switch m.Descriptor().FullName() {
	case structName, listValueName:
		return ""
	}
	return string(f.Name())
}

func joinPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if p == "" {
			continue
		}
		if b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	if b.Len() == 0 {
		return "the request"
	}
	return b.String()
}
