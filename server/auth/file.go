package auth

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Error is one problem in an auth file.
type Error struct {
	File string // path of the file
	Line int    // 1-based line, 0 when unknown
	Msg  string // what is wrong, starting with where in the document
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if loc == "" {
		return e.Msg
	}
	return loc + ": " + e.Msg
}

// Self in a principal's users means the principal's own name.
const Self = "self"

// maxNameBytes bounds names, identities and user ids: they appear in logs.
const maxNameBytes = 256

// LoadFile reads and parses an auth file.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read auth file: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks an auth document; name is used in errors, which
// are *Error with the line of the offending node.
func Parse(name string, data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("not valid YAML: %v", err)}
	}
	p := parser{file: name}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "the document must be a mapping with a principals list")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "principals" {
			return nil, p.errf(k, "unknown field %q (the only one is principals)", k.Value)
		}
		list = v
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		at := root
		if list != nil {
			at = list
		}
		return nil, p.errf(at, "principals: a non-empty list is required")
	}
	cfg := &Config{}
	for i, n := range list.Content {
		pr, err := p.principal(fmt.Sprintf("principals[%d]", i), n)
		if err != nil {
			return nil, err
		}
		cfg.Principals = append(cfg.Principals, pr)
	}
	if err := p.unique(list.Content, cfg.Principals); err != nil {
		return nil, err
	}
	return cfg, nil
}

type parser struct{ file string }

func (p parser) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// principal decodes one entry of the principals list.
func (p parser) principal(path string, n *yaml.Node) (*Principal, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s: must be a mapping (name, token_sha256 or mtls_identity, apps, users, admin)", path)
	}
	pr := &Principal{}
	var users *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := path + "." + k.Value
		if seen[k.Value] {
			return nil, p.errf(k, "%s: given twice", field)
		}
		seen[k.Value] = true
		var err error
		switch k.Value {
		case "name":
			pr.Name, err = p.name(field, v)
		case "token_sha256":
			pr.TokenSHA256, err = p.digest(field, v)
			pr.HasToken = err == nil
		case "mtls_identity":
			pr.MTLSIdentity, err = p.name(field, v)
		case "apps":
			pr.Apps, err = p.names(field, v)
		case "users":
			users = v
		case "admin":
			pr.Admin, err = p.boolean(field, v)
		default:
			err = p.errf(k, "%s: unknown field (the fields are name, token_sha256, mtls_identity, apps, users, admin)", field)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := p.grants(path, n, users, pr); err != nil {
		return nil, err
	}
	return pr, nil
}

// grants checks what a principal was given once all its fields are read:
// users may say self, which needs the name.
func (p parser) grants(path string, n, users *yaml.Node, pr *Principal) error {
	if pr.Name == "" {
		return p.errf(n, "%s.name: required", path)
	}
	if !pr.HasToken && pr.MTLSIdentity == "" {
		return p.errf(n, "%s (%s): token_sha256 or mtls_identity is required", path, pr.Name)
	}
	if users != nil {
		ids, err := p.names(path+".users", users)
		if err != nil {
			return err
		}
		for i, u := range ids {
			switch u {
			case Self:
				ids[i] = pr.Name
			case AllApps:
				return p.errf(users, "%s.users: %q is not a user id; a principal that may act as every user is admin: true", path, u)
			}
		}
		pr.Users = ids
	}
	if pr.Admin {
		return nil
	}
	if len(pr.Apps) == 0 {
		return p.errf(n, "%s (%s): apps is required unless admin: true (%q grants every app)", path, pr.Name, AllApps)
	}
	if len(pr.Users) == 0 {
		return p.errf(n, "%s (%s): users is required unless admin: true ([%s] is the principal's own name)", path, pr.Name, Self)
	}
	return nil
}

// unique refuses two principals with the same name, token or identity:
// which one a caller is must never depend on the order of the file.
func (p parser) unique(nodes []*yaml.Node, prs []*Principal) error {
	names, tokens, ids := map[string]int{}, map[[32]byte]int{}, map[string]int{}
	for i, pr := range prs {
		if j, ok := names[pr.Name]; ok {
			return p.errf(nodes[i], "principals[%d]: name %q is also principals[%d]'s", i, pr.Name, j)
		}
		names[pr.Name] = i
		if j, ok := tokens[pr.TokenSHA256]; ok && pr.HasToken {
			return p.errf(nodes[i], "principals[%d] (%s): token_sha256 is also principals[%d]'s", i, pr.Name, j)
		} else if pr.HasToken {
			tokens[pr.TokenSHA256] = i
		}
		if j, ok := ids[pr.MTLSIdentity]; ok && pr.MTLSIdentity != "" {
			return p.errf(nodes[i], "principals[%d] (%s): mtls_identity %q is also principals[%d]'s", i, pr.Name, pr.MTLSIdentity, j)
		} else if pr.MTLSIdentity != "" {
			ids[pr.MTLSIdentity] = i
		}
	}
	return nil
}

func (p parser) scalar(field string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s: want a string", field)
	}
	return n.Value, nil
}

// name reads a non-empty printable string: names end up in logs.
func (p parser) name(field string, n *yaml.Node) (string, error) {
	s, err := p.scalar(field, n)
	switch {
	case err != nil:
		return "", err
	case s == "":
		return "", p.errf(n, "%s: must not be empty", field)
	case len(s) > maxNameBytes:
		return "", p.errf(n, "%s: %d bytes, longer than the limit of %d", field, len(s), maxNameBytes)
	case !utf8.ValidString(s):
		return "", p.errf(n, "%s: not valid UTF-8", field)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "", p.errf(n, "%s: contains a control character", field)
	}
	return s, nil
}

func (p parser) names(field string, n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s: want a list", field)
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		s, err := p.name(fmt.Sprintf("%s[%d]", field, i), c)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p parser) digest(field string, n *yaml.Node) ([32]byte, error) {
	var sum [32]byte
	s, err := p.scalar(field, n)
	if err != nil {
		return sum, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(sum) {
		return sum, p.errf(n, "%s: want 64 hex digits, the SHA-256 of the token (printf %%s \"$TOKEN\" | sha256sum)", field)
	}
	copy(sum[:], b)
	return sum, nil
}

func (p parser) boolean(field string, n *yaml.Node) (bool, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, nil
		}
	}
	return false, p.errf(n, "%s: want true or false", field)
}
