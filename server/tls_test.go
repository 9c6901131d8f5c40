package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/server/auth"
	"github.com/agentrunner/agentrunner/server/auth/devcerts"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// tlsAuth: alice by token, carol by client certificate.
var tlsAuth = `principals:
  - {name: alice, token_sha256: ` + sha("alice-token") + `, apps: ["*"], users: [self]}
  - {name: carol, mtls_identity: carol, apps: ["*"], users: [self]}
`

// certDir makes a CA, a server certificate for 127.0.0.1 and client
// certificates of carol and mallory in a temp dir.
func certDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := devcerts.Generate(devcerts.Options{Dir: dir, Hosts: []string{"127.0.0.1"}, Clients: []string{"carol", "mallory"}}); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// serveSecure serves a server with cfg on a loopback port, over TLS with
// the certificates of dir (verifying client certificates when given) when
// dir is not empty, and returns its address. It stops at the end of the
// test.
func serveSecure(tb testing.TB, cfg Config, dir string) string {
	tb.Helper()
	var opts []grpc.ServerOption
	if dir != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"))
		if err != nil {
			tb.Fatal(err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{cert}, ClientCAs: pool(tb, dir),
			ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12,
		})))
	}
	g := NewGRPCServer(New(cfg), opts...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(lis) }()
	tb.Cleanup(func() {
		if err := g.Shutdown(context.Background()); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func pool(tb testing.TB, dir string) *x509.CertPool {
	tb.Helper()
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		tb.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		tb.Fatal("no CA certificate")
	}
	return p
}

// dialSecure connects to addr: over TLS trusting dir's CA (with the client
// certificate of client, unless empty) when dir is not empty.
func dialSecure(tb testing.TB, addr, dir, client string) *grpc.ClientConn {
	tb.Helper()
	creds := insecure.NewCredentials()
	if dir != "" {
		tc := &tls.Config{RootCAs: pool(tb, dir), MinVersion: tls.VersionTLS12}
		if client != "" {
			cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client-"+client+".pem"), filepath.Join(dir, "client-"+client+".key"))
			if err != nil {
				tb.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

func secureConfig(tb testing.TB, doc string) (Config, *boltstore.Store) {
	tb.Helper()
	st, err := boltstore.Open(filepath.Join(tb.TempDir(), "agentrunner.db"), boltstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	cfg := Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if doc != "" {
		a, err := auth.Parse("auth.yaml", []byte(doc))
		if err != nil {
			tb.Fatal(err)
		}
		cfg.Auth = a
	}
	return cfg, st
}

// TestTLSTokenAndMTLS: over TLS, a token and a verified client certificate
// each make a principal; a certificate no principal names is
// Unauthenticated (a token beside it still counts); a plaintext client
// does not get through.
func TestTLSTokenAndMTLS(t *testing.T) {
	dir := certDir(t)
	cfg, _ := secureConfig(t, tlsAuth)
	addr := serveSecure(t, cfg, dir)
	create := func(conn *grpc.ClientConn, ctx context.Context, user string) error {
		_, err := servicev1.NewSessionServiceClient(conn).CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "a", UserId: user})
		return err
	}
	plainTLS := dialSecure(t, addr, dir, "")
	carol := dialSecure(t, addr, dir, "carol")
	mallory := dialSecure(t, addr, dir, "mallory")
	for _, tc := range []struct {
		name string
		conn *grpc.ClientConn
		ctx  context.Context
		user string
		want codes.Code
	}{
		{"alice's token over TLS", plainTLS, as(t.Context(), "alice"), "alice", codes.OK},
		{"alice's token for carol", plainTLS, as(t.Context(), "alice"), "carol", codes.PermissionDenied},
		{"no credentials over TLS", plainTLS, t.Context(), "alice", codes.Unauthenticated},
		{"carol's certificate", carol, t.Context(), "carol", codes.OK},
		{"carol's certificate for alice", carol, t.Context(), "alice", codes.PermissionDenied},
		{"carol's certificate and alice's token", carol, as(t.Context(), "alice"), "alice", codes.OK},
		{"a certificate no principal names", mallory, t.Context(), "mallory", codes.Unauthenticated},
		{"alice's token beside mallory's certificate", mallory, as(t.Context(), "alice"), "alice", codes.OK},
		{"plaintext to a TLS server", dialSecure(t, addr, "", ""), as(t.Context(), "alice"), "alice", codes.Unavailable},
	} {
		if err := create(tc.conn, tc.ctx, tc.user); status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	err := create(mallory, t.Context(), "mallory")
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "client certificate mallory matches no principal") {
		t.Errorf("mallory's denial says %q", msg)
	}
}

// BenchmarkSecurity measures a unary call (GetSession of a session with a
// few events) without authentication in plaintext, with a token in
// plaintext, with a token over TLS, and over mTLS: what auth and TLS cost
// per call on an open connection.
func BenchmarkSecurity(b *testing.B) {
	dir := certDir(b)
	for _, mode := range []struct {
		name, doc, tlsDir, cert, principal string
	}{
		{"plaintext,no-auth", "", "", "", ""},
		{"plaintext,token", tlsAuth, "", "", "alice"},
		{"tls,no-auth", "", dir, "", ""},
		{"tls,token", tlsAuth, dir, "", "alice"},
		{"mtls", tlsAuth, dir, "carol", ""},
	} {
		b.Run(mode.name, func(b *testing.B) {
			cfg, _ := secureConfig(b, mode.doc)
			addr := serveSecure(b, cfg, mode.tlsDir)
			user := mode.principal + mode.cert
			if user == "" {
				user = "bench"
			}
			sessions := servicev1.NewSessionServiceClient(dialSecure(b, addr, mode.tlsDir, mode.cert))
			ctx := as(context.Background(), mode.principal)
			if _, err := sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "a", UserId: user, SessionId: "s"}); err != nil {
				b.Fatal(err)
			}
			req := &servicev1.GetSessionRequest{AppName: "a", UserId: user, SessionId: "s"}
			for b.Loop() {
				if _, err := sessions.GetSession(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
