package auth

import (
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary documents to the auth file parser. It must
// refuse what it cannot use with an *Error and never panic; what it
// accepts must be usable: every principal named, with a credential, and a
// non-admin with apps and users.
func FuzzParse(f *testing.F) {
	f.Add(exampleDoc)
	f.Add("principals:\n  - {name: a, mtls_identity: x, admin: true}\n")
	f.Add("principals:\n  - {name: a, token_sha256: " + hash("t") + ", apps: ['*'], users: [self, b]}\n")
	f.Add("principals: [\n")
	f.Add("principals:\n  - &a {name: a}\n  - *a\n")
	f.Add("{\"principals\": [{\"name\": \"a\", \"token_sha256\": \"" + hash("t") + "\", \"admin\": false}]}")
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := Parse("auth.yaml", []byte(doc))
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) || ae.Msg == "" || ae.Line < 0 {
				t.Fatalf("error %T %v is not a located *Error", err, err)
			}
			return
		}
		names := map[string]bool{}
		for _, p := range cfg.Principals {
			switch {
			case p.Name == "" || names[p.Name]:
				t.Fatalf("accepted a principal with an empty or repeated name %q", p.Name)
			case !p.HasToken && p.MTLSIdentity == "":
				t.Fatalf("accepted principal %q with no credential", p.Name)
			case !p.Admin && (len(p.Apps) == 0 || len(p.Users) == 0):
				t.Fatalf("accepted non-admin %q with apps %q, users %q", p.Name, p.Apps, p.Users)
			}
			names[p.Name] = true
			for _, u := range p.Users {
				if u == Self || u == "" {
					t.Fatalf("principal %q keeps user %q", p.Name, u)
				}
			}
		}
	})
}
