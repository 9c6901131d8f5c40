package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/server/auth/devcerts"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func sha(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cli runs the agentrunner command line and returns its output and exit
// status.
func cli(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	err := run(t.Context(), args, strings.NewReader(stdin), &out, &out)
	code := exitCode(err, &out)
	return out.String(), code
}

// secureServer serves the default apps with TLS, mTLS and an auth file of
// alice (token), carol (client certificate) and root (admin token).
func secureServer(t *testing.T) (addr, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := devcerts.Generate(devcerts.Options{Dir: dir, Hosts: []string{"localhost", "127.0.0.1"}, Clients: []string{"carol", "mallory"}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "alice.token"), "alice-secret\n")
	writeFile(t, filepath.Join(dir, "root.token"), "root-secret")
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: [demo], users: [self]}
  - {name: carol, mtls_identity: carol, apps: ["*"], users: [self]}
  - {name: root, token_sha256: `+sha("root-secret")+`, admin: true}
`)
	t.Setenv(envConfig, "")
	ctx, cancel := context.WithCancel(context.Background())
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data.db"),
		"--auth-file", authFile, "--tls-cert", filepath.Join(dir, "server.pem"), "--tls-key", filepath.Join(dir, "server.key"),
		"--client-ca", filepath.Join(dir, "ca.pem"))
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("serve: %v\n%s", err, logs)
		}
		if strings.Contains(logs.String(), "secret") {
			t.Errorf("a token reached the log:\n%s", logs)
		}
	})
	if !strings.Contains(logs.String(), "tls=true mtls=true auth=true") {
		t.Errorf("the serving line does not say TLS, mTLS and auth are on:\n%s", logs)
	}
	return addr, dir
}

// TestServeTLSWithTokens: the command-line clients reach a TLS server with
// a token from --token-file or AGENTRUNNER_TOKEN, act only as their user,
// and fail clearly without a token or without TLS.
func TestServeTLSWithTokens(t *testing.T) {
	addr, dir := secureServer(t)
	ca := filepath.Join(dir, "ca.pem")
	tok := filepath.Join(dir, "alice.token")

	out, code := cli(t, "hello there\n/quit\n", "chat", "--addr", addr, "--ca-file", ca, "--token-file", tok, "--app", "demo", "--user", "alice")
	if code != 0 || !strings.Contains(out, "greeter") {
		t.Fatalf("chat as alice over TLS: exit %d\n%s", code, out)
	}
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--token-file", tok, "--app", "demo", "--user", "alice")
	if code != 0 || strings.Count(out, "\nalice ") != 1 {
		t.Errorf("sessions list as alice: exit %d\n%s", code, out)
	}
	for _, user := range []string{"bob", ""} {
		out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--token-file", tok, "--app", "demo", "--user", user)
		if code != 1 || !strings.Contains(out, "PermissionDenied") {
			t.Errorf("sessions list --user %q as alice: exit %d, want 1 and PermissionDenied\n%s", user, code, out)
		}
	}
	out, code = cli(t, "", "runs", "get", "--addr", addr, "--ca-file", ca, "--token-file", tok, "no-such-run")
	if code != 1 || !strings.Contains(out, "PermissionDenied") {
		t.Errorf("runs get as alice: exit %d\n%s", code, out)
	}
	// The admin, by environment: every user's sessions, and an honest
	// NotFound.
	t.Setenv(clientconn.EnvToken, "root-secret")
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--app", "demo", "--user", "")
	if code != 0 || !strings.Contains(out, "\nalice ") {
		t.Errorf("sessions list of every user as root: exit %d\n%s", code, out)
	}
	out, code = cli(t, "", "runs", "get", "--addr", addr, "--ca-file", ca, "no-such-run")
	if code != 1 || !strings.Contains(out, "NotFound") {
		t.Errorf("runs get as root: exit %d\n%s", code, out)
	}
	t.Setenv(clientconn.EnvToken, "")
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--app", "demo", "--user", "alice")
	if code != 1 || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("sessions list without a token: exit %d\n%s", code, out)
	}
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--token-file", tok, "--app", "demo", "--user", "alice")
	if code != 1 || !strings.Contains(out, clientconn.ServerSpeaksTLS) {
		t.Errorf("sessions list in plaintext to a TLS server: exit %d\n%s", code, out)
	}
	// Health checks stay open.
	cf := clientconn.Flags{CAFile: ca}
	opts, err := cf.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if hc, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without credentials: %v, %v", hc, err)
	}
}

// TestServeMTLS: a client certificate the CA signed is its principal; one
// the auth file does not name is Unauthenticated; one from another CA does
// not get through the handshake.
func TestServeMTLS(t *testing.T) {
	addr, dir := secureServer(t)
	ca := filepath.Join(dir, "ca.pem")
	carol := []string{"--addr", addr, "--ca-file", ca, "--cert-file", filepath.Join(dir, "client-carol.pem"), "--key-file", filepath.Join(dir, "client-carol.key")}

	out, code := cli(t, "hi\n/quit\n", append([]string{"chat", "--app", "demo", "--user", "carol"}, carol...)...)
	if code != 0 || !strings.Contains(out, "greeter") {
		t.Fatalf("chat as carol over mTLS: exit %d\n%s", code, out)
	}
	out, code = cli(t, "", append([]string{"sessions", "list", "--app", "demo", "--user", "alice"}, carol...)...)
	if code != 1 || !strings.Contains(out, "PermissionDenied") {
		t.Errorf("carol listing alice's sessions: exit %d\n%s", code, out)
	}
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--app", "demo", "--user", "mallory",
		"--cert-file", filepath.Join(dir, "client-mallory.pem"), "--key-file", filepath.Join(dir, "client-mallory.key"))
	if code != 1 || !strings.Contains(out, "Unauthenticated") || !strings.Contains(out, "mallory matches no principal") {
		t.Errorf("a certificate no principal names: exit %d\n%s", code, out)
	}
	other := t.TempDir()
	if err := devcerts.Generate(devcerts.Options{Dir: other, Hosts: []string{"localhost"}, Clients: []string{"carol"}}); err != nil {
		t.Fatal(err)
	}
	out, code = cli(t, "", "sessions", "list", "--addr", addr, "--ca-file", ca, "--app", "demo", "--user", "carol",
		"--cert-file", filepath.Join(other, "client-carol.pem"), "--key-file", filepath.Join(other, "client-carol.key"))
	if code != 1 || !strings.Contains(out, "server unavailable") {
		t.Errorf("carol's name on a certificate of another CA: exit %d\n%s", code, out)
	}
}

// TestServeExposure: an address beyond loopback needs authentication or
// --insecure-no-auth, which is said loudly.
func TestServeExposure(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envConfig, "")
	t.Setenv(envAuthFile, "")
	var stderr strings.Builder
	err := run(t.Context(), append(noConsole(), "--addr", "0.0.0.0:0", "--data", filepath.Join(dir, "a.db")), strings.NewReader(""), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") || !strings.Contains(err.Error(), "--insecure-no-auth") {
		t.Fatalf("serve on 0.0.0.0 without auth: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, exited, logs := startRun(t, ctx, "--addr", "0.0.0.0:0", "--data", filepath.Join(dir, "b.db"), "--insecure-no-auth")
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"!!! --insecure-no-auth: SERVING WITHOUT AUTHENTICATION") {
		t.Errorf("no loud warning:\n%s", logs)
	}
}

func TestServeSecurityFlagErrors(t *testing.T) {
	dir := t.TempDir()
	if err := devcerts.Generate(devcerts.Options{Dir: dir, Hosts: []string{"localhost"}}); err != nil {
		t.Fatal(err)
	}
	mtlsOnly := writeFile(t, filepath.Join(dir, "mtls.yaml"), "principals:\n  - {name: a, mtls_identity: a, admin: true}\n")
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "principals:\n  - name: a\n    token_sha256: nope\n")
	cert, key := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	data := filepath.Join(dir, "x.db")
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
	}{
		{"cert without key", []string{"--tls-cert", cert}, "--tls-cert and --tls-key go together", 2},
		{"client CA without TLS", []string{"--client-ca", cert}, "needs TLS", 2},
		{"auth and insecure", []string{"--auth-file", bad, "--insecure-no-auth"}, "contradict", 2},
		{"bad auth file", []string{"--auth-file", bad}, "bad.yaml:3: principals[0].token_sha256: want 64 hex digits", 1},
		{"missing auth file", []string{"--auth-file", filepath.Join(dir, "none.yaml")}, "read auth file", 1},
		{"mTLS principals without client CA", []string{"--auth-file", mtlsOnly, "--tls-cert", cert, "--tls-key", key}, "need --client-ca", 1},
		{"zero run limit", []string{"--max-runs", "0"}, "must be positive", 2},
		{"page size above the store's", []string{"--max-page-size", "5000"}, "--max-page-size (1 to 1000)", 2},
		{"request above a message", []string{"--max-request-bytes", "99999999"}, "--max-request-bytes must be from 1 to", 2},
		{"zero parts", []string{"--max-parts", "0"}, "--max-parts, --max-inline-bytes and --max-artifact-bytes must be positive", 2},
		{"artifact above a message", []string{"--max-artifact-bytes", "999999999"}, "--max-artifact-bytes at most", 2},
		{"key of another cert", []string{"--tls-cert", cert, "--tls-key", filepath.Join(dir, "ca.key")}, "load --tls-cert/--tls-key", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envConfig, "")
			t.Setenv(envAuthFile, "")
			err := run(t.Context(), append(append(noConsole(), "--addr", "127.0.0.1:0", "--data", data), tc.args...), strings.NewReader(""), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not mention %q", err, tc.want)
			}
			if code := exitCode(err, io.Discard); code != tc.code {
				t.Errorf("exit code = %d, want %d", code, tc.code)
			}
		})
	}
}
