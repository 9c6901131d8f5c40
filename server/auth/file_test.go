package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
)

func hash(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

var exampleDoc = `# tokens: alice-token, bob-token, admin-token
principals:
  - name: alice
    token_sha256: ` + hash("alice-token") + `
    apps: [demo]
    users: [self, alice2]
  - name: bob
    token_sha256: ` + hash("bob-token") + `
    mtls_identity: bob.example.com
    apps: ["*"]
    users: [self]
  - name: ops
    token_sha256: ` + strings.ToUpper(hash("admin-token")) + `
    admin: true
`

func TestParseExample(t *testing.T) {
	cfg, err := Parse("auth.yaml", []byte(exampleDoc))
	if err != nil {
		t.Fatal(err)
	}
	alice, ok := cfg.ByToken("alice-token")
	if !ok || alice.Name != "alice" {
		t.Fatalf("ByToken(alice-token) = %v, %v", alice, ok)
	}
	for _, tc := range []struct {
		p         string
		app, user string
		want      bool
	}{
		{"alice", "demo", "alice", true},
		{"alice", "demo", "alice2", true},
		{"alice", "demo", "bob", false},
		{"alice", "other", "alice", false},
		{"alice", "demo", "", false},
		{"bob", "anything", "bob", true},
		{"bob", "demo", "alice", false},
		{"ops", "demo", "", true},
		{"ops", "x", "alice", true},
	} {
		var p *Principal
		for _, c := range cfg.Principals {
			if c.Name == tc.p {
				p = c
			}
		}
		if got := p.MayUse(tc.app, tc.user); got != tc.want {
			t.Errorf("%s.MayUse(%q, %q) = %v, want %v", tc.p, tc.app, tc.user, got, tc.want)
		}
	}
	if p, ok := cfg.ByToken("admin-token"); !ok || !p.Admin {
		t.Errorf("ByToken(admin-token) = %v, %v; the upper-case hex must match", p, ok)
	}
	for _, bad := range []string{"", "alice-token ", "alice", hash("alice-token")} {
		if p, ok := cfg.ByToken(bad); ok {
			t.Errorf("ByToken(%q) = %s, want none", bad, p.Name)
		}
	}
}

func TestByCertificate(t *testing.T) {
	cfg, err := Parse("auth.yaml", []byte(`principals:
  - {name: cn, mtls_identity: client-cn, apps: [a], users: [self]}
  - {name: dns, mtls_identity: svc.example.com, apps: [a], users: [self]}
  - {name: uri, mtls_identity: "spiffe://example.com/svc", apps: [a], users: [self]}
  - {name: ip, mtls_identity: "10.0.0.7", apps: [a], users: [self]}
`))
	if err != nil {
		t.Fatal(err)
	}
	spiffe, _ := url.Parse("spiffe://example.com/svc")
	for _, tc := range []struct {
		cert *x509.Certificate
		want string
	}{
		{&x509.Certificate{Subject: pkix.Name{CommonName: "client-cn"}}, "cn"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "other"}, DNSNames: []string{"x", "svc.example.com"}}, "dns"},
		{&x509.Certificate{URIs: []*url.URL{spiffe}}, "uri"},
		{&x509.Certificate{IPAddresses: []net.IP{net.ParseIP("10.0.0.7")}}, "ip"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "nobody", Organization: []string{"client-cn"}}}, ""},
		{nil, ""},
	} {
		p, ok := cfg.ByCertificate(tc.cert)
		got := ""
		if ok {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("ByCertificate(%v) = %q, want %q", tc.cert, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	h := hash("t")
	for _, tc := range []struct {
		name, doc string
		want      []string // substrings of the error
	}{
		{"not yaml", "principals: [", []string{"auth.yaml: ", "not valid YAML"}},
		{"empty", "", []string{"not valid YAML"}},
		{"not a mapping", "- a\n", []string{"auth.yaml:1: ", "mapping"}},
		{"unknown top field", "principal: []\n", []string{"auth.yaml:1: ", `unknown field "principal"`}},
		{"no principals", "principals: []\n", []string{"auth.yaml:1: ", "non-empty list"}},
		{"unknown field", "principals:\n  - name: a\n    tokn: x\n", []string{"auth.yaml:3: ", "principals[0].tokn: unknown field"}},
		{"bad hex", "principals:\n  - name: a\n    token_sha256: abc\n", []string{"auth.yaml:3: ", "principals[0].token_sha256: want 64 hex digits", "sha256sum"}},
		{"no credential", "principals:\n  - name: a\n    apps: [x]\n    users: [self]\n", []string{"auth.yaml:2: ", "token_sha256 or mtls_identity is required"}},
		{"no name", "principals:\n  - token_sha256: " + h + "\n", []string{"auth.yaml:2: ", "principals[0].name: required"}},
		{"no apps", "principals:\n  - {name: a, token_sha256: " + h + ", users: [self]}\n", []string{"auth.yaml:2: ", "apps is required unless admin"}},
		{"no users", "principals:\n  - {name: a, token_sha256: " + h + ", apps: [x]}\n", []string{"auth.yaml:2: ", "users is required unless admin"}},
		{"star user", "principals:\n  - {name: a, token_sha256: " + h + ", apps: [x],\n     users: ['*']}\n", []string{"auth.yaml:3: ", "admin: true"}},
		{"admin not bool", "principals:\n  - {name: a, token_sha256: " + h + ", admin: yes please}\n", []string{"auth.yaml:2: ", "principals[0].admin: want true or false"}},
		{"apps not list", "principals:\n  - {name: a, token_sha256: " + h + ", apps: demo, users: [self]}\n", []string{"principals[0].apps: want a list"}},
		{"control char", "principals:\n  - {name: \"a\\nb\", token_sha256: " + h + ", admin: true}\n", []string{"principals[0].name: contains a control character"}},
		{"duplicate field", "principals:\n  - name: a\n    name: b\n", []string{"auth.yaml:3: ", "principals[0].name: given twice"}},
		{"duplicate name", "principals:\n  - {name: a, token_sha256: " + h + ", admin: true}\n  - {name: a, token_sha256: " + hash("u") + ", admin: true}\n", []string{"auth.yaml:3: ", `name "a" is also principals[0]'s`}},
		{"duplicate token", "principals:\n  - {name: a, token_sha256: " + h + ", admin: true}\n  - {name: b, token_sha256: " + h + ", admin: true}\n", []string{"auth.yaml:3: ", "token_sha256 is also principals[0]'s"}},
		{"duplicate identity", "principals:\n  - {name: a, mtls_identity: x, admin: true}\n  - {name: b, mtls_identity: x, admin: true}\n", []string{"auth.yaml:3: ", `mtls_identity "x" is also`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("auth.yaml", []byte(tc.doc))
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("error = %v (%T), want *Error", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
