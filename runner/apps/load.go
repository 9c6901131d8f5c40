package apps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
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
	Col  int    // 1-based column (of a syntax error), 0 when unknown
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
		if e.Line > 0 && e.Col > 0 {
			loc += ":" + strconv.Itoa(e.Col)
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
// JSON is accepted as the YAML subset it is. The error is an *Error, or
// Errors when the file has several problems: all of them, up to
// MaxErrors, each with its file, line and field.
func Parse(name string, data []byte, opts ...Option) (*agentrunnerv1.AppsConfig, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, syntaxError(name, data, err)
	}
	cfg := &agentrunnerv1.AppsConfig{}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	c := converter{file: name, lines: map[string]int{}}
	generic, err := c.message(root, cfg.ProtoReflect().Descriptor(), "")
	c.errs.add(err)
	if err != nil {
		return nil, c.errs.err() // no document to validate
	}
	js, err := json.Marshal(generic)
	if err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	// The walk above has already checked names and types with positions;
	// protojson does the decoding and catches anything it missed. The
	// fields the walk refused are left out of js.
	if err := protojson.Unmarshal(js, cfg); err != nil {
		c.errs.add(&Error{File: name, Msg: err.Error()})
		return nil, c.errs.err()
	}
	// Validated even when the walk refused some fields, so that a file's
	// problems come out together: an unknown field does not hide the rest.
	c.validate(cfg, opts)
	if err := c.errs.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// validate adds the problems Validate finds in cfg to c.errs, at their
// lines, except those at or under a place where the walk refused a field:
// the field left out there (a misspelt required one, say) would be
// reported again as missing.
func (c *converter) validate(cfg *agentrunnerv1.AppsConfig, opts []Option) {
	refused := make([]string, 0, len(c.errs.errs))
	for _, e := range c.errs.errs {
		refused = append(refused, e.Path)
	}
	var l errList
	l.add(Validate(cfg, opts...))
	for _, ve := range l.errs {
		if slices.ContainsFunc(refused, func(p string) bool { return under(ve.Path, p) }) {
			continue
		}
		ve.File, ve.Line = c.file, c.lineOf(ve.Path)
		c.errs.add(ve)
	}
}

// under reports whether path is at or under place (every path is under
// the document's, "").
func under(path, place string) bool {
	return place == "" || path == place || strings.HasPrefix(path, place+".") || strings.HasPrefix(path, place+"[")
}

// converter turns a YAML tree into plain JSON values, checking it against a
// message descriptor, and remembers the line of every path for later errors.
// It goes on past a bad field, so that one run reports them all.
type converter struct {
	file  string
	lines map[string]int
	errs  errList
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

// message converts a mapping. Problems in its fields go to c.errs and the
// fields are left out; the error is for a value that is no mapping.
func (c *converter) message(n *yaml.Node, md protoreflect.MessageDescriptor, path string) (map[string]any, error) {
	c.lines[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return map[string]any{}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, c.fail(n, path, "want a mapping of %s fields", md.Name())
	}
	out := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content) && !c.errs.full(); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		fd, err := c.fieldOf(kn, md, path, out)
		if err != nil {
			c.errs.add(err)
			continue
		}
		fpath := join(path, string(fd.Name()))
		c.lines[fpath] = vn.Line
		v, err := c.field(vn, fd, fpath)
		if err != nil {
			c.errs.add(err)
			continue
		}
		out[fd.JSONName()] = v
	}
	return out, nil
}

// fieldOf finds the field a key names, refusing unknown fields (with the
// closest known name), repeats, and a second member of a oneof.
func (c *converter) fieldOf(kn *yaml.Node, md protoreflect.MessageDescriptor, path string, out map[string]any) (protoreflect.FieldDescriptor, error) {
	fd := md.Fields().ByName(protoreflect.Name(kn.Value))
	if fd == nil {
		fd = md.Fields().ByJSONName(kn.Value)
	}
	if fd == nil {
		var names []string
		for i := range md.Fields().Len() {
			names = append(names, string(md.Fields().Get(i).Name()))
		}
		return nil, c.fail(kn, path, "unknown field %q in %s%s", kn.Value, md.Name(), didYouMean(kn.Value, names))
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
	return fd, nil
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
				c.errs.add(err)
				continue
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
		if n.Tag != "!!str" && secretBearing(fd) {
			return nil, c.fail(n, path, "want a string (quote it; the value is not shown, as it may be a secret)")
		}
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
		return nil, c.fail(n, path, "unknown value %q%s, want one of %v", n.Value, didYouMean(n.Value, names), names)
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

// secretBearing reports whether a field's value may be a secret, or a
// secret pasted in place of a name (api_key_env, header_env, env): errors
// must not show it.
func secretBearing(fd protoreflect.FieldDescriptor) bool {
	name := string(fd.Name())
	return name == "env" || strings.HasSuffix(name, "_env")
}
