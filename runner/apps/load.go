package apps

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"gopkg.in/yaml.v3"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Error is one problem in an apps file.
type Error struct {
	File string // path of the file
	Line int    // 1-based line, 0 when unknown
	Path string // where in the document, e.g. apps[0].root_agent.name
	Msg  string // what is wrong
}

func (e *Error) Error() string {
	var parts []string
	if e.File != "" {
		loc := e.File
		if e.Line > 0 {
			loc += ":" + strconv.Itoa(e.Line)
		}
		parts = append(parts, loc)
	}
	if e.Path != "" {
		parts = append(parts, e.Path)
	}
	return strings.Join(append(parts, e.Msg), ": ")
}

// LoadFile reads, decodes and validates an apps file.
func LoadFile(path string, opts ...Option) (*agentrunnerv1.AppsConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read apps file: %w", err)
	}
	return Parse(path, data, opts...)
}

// Parse decodes and validates an apps document; name is used in errors.
// JSON is accepted as the YAML subset it is.
func Parse(name string, data []byte, opts ...Option) (*agentrunnerv1.AppsConfig, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("not valid YAML or JSON: %v", err)}
	}
	cfg := &agentrunnerv1.AppsConfig{}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	c := converter{file: name}
	generic, err := c.message(root, cfg.ProtoReflect().Descriptor(), "")
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	// The walk above has already checked names and types with positions;
	// protojson does the decoding and catches anything it missed.
	if err := protojson.Unmarshal(js, cfg); err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if err := Validate(cfg, opts...); err != nil {
		var ve *Error
		if errors.As(err, &ve) {
			ve.File = name
			ve.Line = c.lineOf(ve.Path)
		}
		return nil, err
	}
	return cfg, nil
}

// converter turns a YAML tree into plain JSON values, checking it against a
// message descriptor, and remembers the line of every path for later errors.
type converter struct {
	file  string
	lines map[string]int
}

func (c *converter) fail(n *yaml.Node, path, format string, args ...any) error {
	return &Error{File: c.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (c *converter) message(n *yaml.Node, md protoreflect.MessageDescriptor, path string) (map[string]any, error) {
	if c.lines == nil {
		c.lines = map[string]int{}
	}
	c.lines[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, c.fail(n, path, "want a mapping of %s fields", md.Name())
	}
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		fd := md.Fields().ByName(protoreflect.Name(kn.Value))
		if fd == nil {
			fd = md.Fields().ByJSONName(kn.Value)
		}
		if fd == nil {
			return nil, c.fail(kn, path, "unknown field %q in %s", kn.Value, md.Name())
		}
		fpath := join(path, string(fd.Name()))
		if _, dup := out[fd.JSONName()]; dup {
			return nil, c.fail(kn, fpath, "field given twice")
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			for j := range od.Fields().Len() {
				other := od.Fields().Get(j)
				if _, set := out[other.JSONName()]; set && other != fd {
					return nil, c.fail(kn, fpath, "%s and %s are exclusive: give only one", other.Name(), fd.Name())
				}
			}
		}
		c.lines[fpath] = vn.Line
		v, err := c.field(vn, fd, fpath)
		if err != nil {
			return nil, err
		}
		out[fd.JSONName()] = v
	}
	return out, nil
}

func (c *converter) field(n *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	if fd.IsList() {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return []any{}, nil
		}
		if n.Kind != yaml.SequenceNode {
			return nil, c.fail(n, path, "want a list")
		}
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			epath := fmt.Sprintf("%s[%d]", path, i)
			c.lines[epath] = e.Line
			v, err := c.single(e, fd, epath)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return c.single(n, fd, path)
}

func (c *converter) single(n *yaml.Node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	if fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == "google.protobuf.Struct" {
		return c.object(n, path)
	}
	if fd.Kind() == protoreflect.MessageKind {
		return c.message(n, fd.Message(), path)
	}
	if n.Kind != yaml.ScalarNode {
		return nil, c.fail(n, path, "want a %s value", fd.Kind())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if n.Tag != "!!str" {
			return nil, c.fail(n, path, "want a string, got %q (quote it)", n.Value)
		}
		return n.Value, nil
	case protoreflect.BoolKind:
		var b bool
		if n.Tag != "!!bool" || n.Decode(&b) != nil {
			return nil, c.fail(n, path, "want true or false, got %q", n.Value)
		}
		return b, nil
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		var i int64
		if n.Tag != "!!int" || n.Decode(&i) != nil {
			return nil, c.fail(n, path, "want an integer, got %q", n.Value)
		}
		return i, nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		var f float64
		if (n.Tag != "!!float" && n.Tag != "!!int") || n.Decode(&f) != nil {
			return nil, c.fail(n, path, "want a number, got %q", n.Value)
		}
		return f, nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByName(protoreflect.Name(n.Value)); ev != nil {
			return n.Value, nil
		}
		var names []string
		for i := range fd.Enum().Values().Len() {
			names = append(names, string(fd.Enum().Values().Get(i).Name()))
		}
		return nil, c.fail(n, path, "unknown value %q, want one of %v", n.Value, names)
	}
	return nil, c.fail(n, path, "unsupported field kind %s", fd.Kind())
}

// object decodes a free-form JSON object (a google.protobuf.Struct field,
// such as a JSON Schema) as it is.
func (c *converter) object(n *yaml.Node, path string) (map[string]any, error) {
	if n.Kind != yaml.MappingNode {
		return nil, c.fail(n, path, "want a mapping (a JSON object)")
	}
	var v map[string]any
	if err := n.Decode(&v); err != nil {
		return nil, c.fail(n, path, "not a JSON object: %v", err)
	}
	return v, nil
}

// lineOf returns the line of path or, for a field the file leaves out, of
// the nearest enclosing value it has.
func (c *converter) lineOf(path string) int {
	for path != "" {
		if line, ok := c.lines[path]; ok {
			return line
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}
