// Package auth reads the auth file of `agentrunner serve --auth-file` and
// answers who a caller is (by bearer token or mTLS client certificate) and
// what that principal may do (which apps, which user ids, or everything).
//
// It owns the file format and the identity checks; it does not import gRPC:
// the server's interceptors turn its answers into status codes.
//
// The file is YAML:
//
//	principals:
//	  - name: alice                 # unique; "self" in users means this
//	    token_sha256: 2bd8...e1     # hex SHA-256 of the bearer token
//	    apps: [demo]                # or ["*"] for every app
//	    users: [self]               # user ids it may act as
//	  - name: ops
//	    mtls_identity: ops.example.com  # client certificate CN or a SAN
//	    admin: true                 # every app, every user, listings
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"slices"
)

// Principal is one caller the file names, and its grants.
type Principal struct {
	// Name identifies the principal in logs; users: [self] grants it.
	Name string
	// TokenSHA256 is the SHA-256 of its bearer token; HasToken says
	// whether it has one.
	TokenSHA256 [sha256.Size]byte
	HasToken    bool
	// MTLSIdentity matches a verified client certificate's subject CN or
	// one of its SANs (DNS, email, URI, IP); empty when it has none.
	MTLSIdentity string
	// Apps it may use; "*" is every app.
	Apps []string
	// Users are the user ids it may act as ("self" already replaced by
	// Name).
	Users []string
	// Admin may do anything: every app, every user, listings of all users.
	Admin bool
}

// AllApps in Apps grants every app.
const AllApps = "*"

// MayUse reports whether p may act as user on app.
func (p *Principal) MayUse(app, user string) bool {
	if p.Admin {
		return true
	}
	if !slices.Contains(p.Apps, AllApps) && !slices.Contains(p.Apps, app) {
		return false
	}
	return user != "" && slices.Contains(p.Users, user)
}

// MayUseApp reports whether p may use app at all (as some user).
func (p *Principal) MayUseApp(app string) bool {
	return p.Admin || slices.Contains(p.Apps, AllApps) || slices.Contains(p.Apps, app)
}

// Config is a parsed auth file.
type Config struct {
	Principals []*Principal
}

// ByToken returns the principal whose token is token. The token's hash is
// compared with every principal's in constant time, so the time taken does
// not depend on which principal, if any, matched or how much of a hash did.
func (c *Config) ByToken(token string) (*Principal, bool) {
	sum := sha256.Sum256([]byte(token))
	var found *Principal
	for _, p := range c.Principals {
		if !p.HasToken {
			continue
		}
		if subtle.ConstantTimeCompare(sum[:], p.TokenSHA256[:]) == 1 && found == nil {
			found = p
		}
	}
	return found, found != nil
}

// ByCertificate returns the principal whose mTLS identity is the subject
// CN or a SAN of cert, a certificate the TLS layer has already verified.
func (c *Config) ByCertificate(cert *x509.Certificate) (*Principal, bool) {
	if cert == nil {
		return nil, false
	}
	ids := CertificateIdentities(cert)
	for _, p := range c.Principals {
		if p.MTLSIdentity != "" && slices.Contains(ids, p.MTLSIdentity) {
			return p, true
		}
	}
	return nil, false
}

// HasMTLS reports whether any principal authenticates by certificate.
func (c *Config) HasMTLS() bool {
	return slices.ContainsFunc(c.Principals, func(p *Principal) bool { return p.MTLSIdentity != "" })
}

// CertificateIdentities lists what an mtls_identity may match in cert: its
// subject common name, then its DNS, email, URI and IP SANs.
func CertificateIdentities(cert *x509.Certificate) []string {
	var ids []string
	if cert.Subject.CommonName != "" {
		ids = append(ids, cert.Subject.CommonName)
	}
	ids = append(ids, cert.DNSNames...)
	ids = append(ids, cert.EmailAddresses...)
	for _, u := range cert.URIs {
		ids = append(ids, u.String())
	}
	for _, ip := range cert.IPAddresses {
		ids = append(ids, ip.String())
	}
	return ids
}
