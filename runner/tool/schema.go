package tool

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// argsSchema derives the JSON schema of a function tool's arguments from
// their Go type, and the names of the required top-level properties. The
// model only accepts an object, so t must be a struct, a pointer to one,
// or a map with string keys.
func argsSchema(t reflect.Type) (schema map[string]any, required []string, err error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != timeType:
	case t.Kind() == reflect.Map && isStringKey(t.Key()):
	default:
		return nil, nil, fmt.Errorf("type %s: want a struct or a map with string keys", t)
	}
	schema, err = typeSchema(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, nil, err
	}
	required, _ = schema["required"].([]string)
	return schema, required, nil
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// typeSchema returns the schema of values of type t as encoding/json writes
// them. onPath holds the struct types being expanded, to refuse recursion,
// which a schema without references cannot express.
func typeSchema(t reflect.Type, onPath map[reflect.Type]bool) (map[string]any, error) {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case rawMessageType:
		return map[string]any{}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem(), onPath)
	case reflect.Interface:
		return map[string]any{}, nil // any JSON value
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			// encoding/json writes []byte as a base64 string.
			return map[string]any{"type": "string", "description": "base64-encoded bytes"}, nil
		}
		items, err := typeSchema(t.Elem(), onPath)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if !isStringKey(t.Key()) {
			return nil, fmt.Errorf("type %s: map keys must be strings, integers or encoding.TextMarshaler", t)
		}
		values, err := typeSchema(t.Elem(), onPath)
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "object"}
		if len(values) > 0 {
			s["additionalProperties"] = values
		}
		return s, nil
	case reflect.Struct:
		return structSchema(t, onPath)
	}
	return nil, fmt.Errorf("type %s: %s values cannot be passed as JSON", t, t.Kind())
}

// isStringKey reports whether encoding/json writes map keys of type k as
// strings.
func isStringKey(k reflect.Type) bool {
	switch k.Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return k.Implements(textMarshalerType)
}

// jsonField is a struct field as encoding/json names it.
type jsonField struct {
	name     string
	optional bool
	field    reflect.StructField
}

func structSchema(t reflect.Type, onPath map[reflect.Type]bool) (map[string]any, error) {
	if onPath[t] {
		return nil, fmt.Errorf("type %s is recursive; recursive argument types are not supported", t)
	}
	onPath[t] = true
	defer delete(onPath, t)

	fields, err := jsonFields(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	props := make(map[string]any, len(fields))
	required := []string{}
	for _, f := range fields {
		s, err := typeSchema(f.field.Type, onPath)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.field.Name, err)
		}
		if d := fieldDescription(f.field.Tag); d != "" {
			s["description"] = d
		}
		props[f.name] = s
		if !f.optional {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

// jsonFields lists the fields encoding/json encodes for struct type t, in
// order. Fields of embedded structs without a json name are promoted; a
// name the outer struct already has wins over a promoted one, which is
// what encoding/json does for fields at different depths.
func jsonFields(t reflect.Type, embedding map[reflect.Type]bool) ([]jsonField, error) {
	var direct []jsonField
	var embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			embedded = append(embedded, f)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				optional = true
			}
		}
		direct = append(direct, jsonField{name: name, optional: optional, field: f})
	}
	taken := make(map[string]bool, len(direct))
	for _, f := range direct {
		taken[f.name] = true
	}
	out := direct
	for _, e := range embedded {
		et := e.Type
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if embedding[et] {
			return nil, fmt.Errorf("type %s embeds itself", et)
		}
		embedding[et] = true
		promoted, err := jsonFields(et, embedding)
		delete(embedding, et)
		if err != nil {
			return nil, err
		}
		for _, f := range promoted {
			if !taken[f.name] {
				taken[f.name] = true
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// fieldDescription reads a field's description from its `description`
// tag, or its `jsonschema` tag: "description=..." or the bare text.
func fieldDescription(tag reflect.StructTag) string {
	if d, ok := tag.Lookup("description"); ok {
		return d
	}
	d := tag.Get("jsonschema")
	if rest, ok := strings.CutPrefix(d, "description="); ok {
		return rest
	}
	return d
}
