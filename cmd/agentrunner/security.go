package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/agentrunner/agentrunner/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// envAuthFile sets --auth-file.
const envAuthFile = "AGENTRUNNER_AUTH_FILE"

// securityFlags are serve's authentication and TLS settings.
type securityFlags struct {
	authFile         string
	tlsCert, tlsKey  string
	clientCA         string
	insecureNoAuthOK bool
}

// security is what securityFlags load to: the principals (nil: no
// authentication) and the server's TLS options (none: plaintext).
type security struct {
	auth    *auth.Config
	tls     bool
	mtls    bool
	options []grpc.ServerOption
	// tlsConfig is the TLS of options, for the HTTP listener (nil:
	// plaintext), which serves the same certificate and client CAs.
	tlsConfig *tls.Config
}

// check refuses combinations that cannot mean what was asked.
func (f securityFlags) check() error {
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return usagef("--tls-cert and --tls-key go together")
	case f.clientCA != "" && f.tlsCert == "":
		return usagef("--client-ca (mTLS) needs TLS: give --tls-cert and --tls-key too")
	case f.insecureNoAuthOK && f.authFile != "":
		return usagef("--insecure-no-auth and --auth-file contradict each other")
	}
	return nil
}

// loadSecurity reads the auth file and the TLS files.
func loadSecurity(f securityFlags) (*security, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	sec := &security{}
	if f.authFile != "" {
		cfg, err := auth.LoadFile(f.authFile)
		if err != nil {
			return nil, err
		}
		if cfg.HasMTLS() && f.clientCA == "" {
			return nil, fmt.Errorf("%s: principals with an mtls_identity need --client-ca, which verifies client certificates", f.authFile)
		}
		sec.auth = cfg
	}
	if f.tlsCert == "" {
		return sec, nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("load --tls-cert/--tls-key: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, fmt.Errorf("read --client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca %s: no PEM certificate in it", f.clientCA)
		}
		tc.ClientCAs = pool
		// A client may still come with a token instead of a certificate;
		// one that presents a certificate must present a valid one.
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		sec.mtls = true
	}
	sec.tls = true
	sec.options = []grpc.ServerOption{grpc.Creds(credentials.NewTLS(tc))}
	sec.tlsConfig = tc
	return sec, nil
}

// errNoAuth is serving beyond loopback with no authentication.
var errNoAuth = errors.New("no authentication")

// checkExposure refuses to serve an address other hosts can reach without
// authentication, unless --insecure-no-auth says so; then, and when tokens
// would cross the network in clear text, it warns at start. flag names
// the listener's flag (--addr, --http-addr) in what it says: both
// listeners serve the same API and are held to the same rule.
// isLoopback reports whether lis listens on a loopback address.
func isLoopback(lis net.Listener) bool {
	ta, ok := lis.Addr().(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

func checkExposure(lis net.Listener, flag string, sec *security, insecureOK bool, log *slog.Logger) error {
	addr := lis.Addr().String()
	loopback := false
	if ta, ok := lis.Addr().(*net.TCPAddr); ok {
		loopback = ta.IP.IsLoopback()
	}
	switch {
	case sec.auth == nil && !loopback && !insecureOK:
		return fmt.Errorf("refusing to serve %s (%s), which is not a loopback address, with %w: give --auth-file (docs/security.md), or --insecure-no-auth to let anyone who reaches the port read and write every user's sessions", addr, flag, errNoAuth)
	case sec.auth == nil && insecureOK:
		log.Warn("!!! --insecure-no-auth: SERVING WITHOUT AUTHENTICATION: anyone who reaches " + addr + " can read, write and delete every user's sessions, artifacts and runs !!!")
	case sec.auth != nil && !sec.tls && !loopback:
		log.Warn("serving tokens over plaintext: bearer tokens cross the network readable; give --tls-cert and --tls-key", "addr", addr, "flag", flag)
	}
	return nil
}
