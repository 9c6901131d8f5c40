package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/server/auth/devcerts"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
)

// canary returns a unique secret with prefix; the test fails if it shows
// up in anything the server prints or serves.
func canary(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "CANARY" + hex.EncodeToString(b)
}

// seen gathers everything a client or an operator sees: logs, responses,
// errors.
type seen struct{ strings.Builder }

func (s *seen) add(v ...any) { fmt.Fprintln(&s.Builder, v...) }

func (s *seen) mustNotHold(t *testing.T, what string, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s.String(), sec) {
			t.Errorf("%s: a secret (%.14s…) was printed or served:\n%s", what, sec, s)
		}
	}
}

// secretsConfig is an apps file whose models use a key from the
// environment against fake providers that refuse it (401) or fail (500),
// and whose MCP servers take a header from the environment and a literal
// environment value, and cannot be reached.
func secretsConfig(deny, fail, mcp, envValue string) string {
	return fmt.Sprintf(`models:
  - {name: denied, provider: openai, model: m, base_url: "%s/v1", api_key_env: AR_CANARY_KEY, retry: {max_attempts: 1}}
  - {name: broken, provider: anthropic, model: m, base_url: "%s", api_key_env: AR_CANARY_KEY, retry: {max_attempts: 1}}
apps:
  - name: denied
    mcp_servers:
      - {name: remote, url: "%s/mcp", header_env: ["Authorization=AR_CANARY_MCP"], optional: true}
      - {name: local, command: /nonexistent/agentrunner-mcp, env: ["SECRET=%s"], optional: true}
    root_agent: {name: r, llm: {model: denied}}
  - name: broken
    root_agent: {name: r, llm: {model: broken}}
`, deny, fail, mcp, envValue)
}

func fakeStatus(t *testing.T, code int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error": {"message": "status %d", "type": "error"}}`, code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNoSecretPrintedOrServed puts a canary secret everywhere one can be
// configured (a model key in the environment, an MCP header from the
// environment, an MCP server's environment, a bearer token in the auth
// file, the TLS key), drives the server through start, ListApps, failing
// runs, refused calls and shutdown, and checks that no canary appears in
// the log, a response or an error.
func TestNoSecretPrintedOrServed(t *testing.T) {
	dir := t.TempDir()
	key, mcpHeader, envValue, token, wrong := canary(t, "sk-"), canary(t, "Bearer "), canary(t, ""), canary(t, ""), canary(t, "")
	t.Setenv("AR_CANARY_KEY", key)
	t.Setenv("AR_CANARY_MCP", mcpHeader)
	t.Setenv(envConfig, "")
	if err := devcerts.Generate(devcerts.Options{Dir: dir, Hosts: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	pemKey, err := os.ReadFile(filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := append([]string{key, mcpHeader, strings.TrimPrefix(mcpHeader, "Bearer "), envValue, token, wrong}, keyLines(string(pemKey))...)
	cfg := writeFile(t, filepath.Join(dir, "apps.yaml"), secretsConfig(fakeStatus(t, 401), fakeStatus(t, 500), fakeStatus(t, 401), envValue))
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), "principals:\n  - {name: root, token_sha256: "+sha(token)+", admin: true}\n")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "a.db"), "--config", cfg,
		"--auth-file", authFile, "--tls-cert", filepath.Join(dir, "server.pem"), "--tls-key", filepath.Join(dir, "server.key"), "--log-level", "debug")
	var out seen
	good := secretsClient(t, addr, dir, token)
	driveSecrets(t, &out, good)
	driveSecrets(t, &out, secretsClient(t, addr, dir, wrong))
	cancel()
	out.add(<-exited)
	out.add(logs.String())
	// The paths under test ran: a refused key, a failing provider, both
	// MCP servers left out, a wrong token.
	for _, want := range []string{"PERMISSION_DENIED", "UNAVAILABLE", "server=remote", "server=local", "Unauthenticated"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("nothing says %q: the calls missed a path under test:\n%s", want, &out)
		}
	}
	out.mustNotHold(t, "serving", secrets...)
}

// keyLines are the base64 lines of a PEM private key.
func keyLines(pem string) []string {
	var out []string
	for _, l := range strings.Split(pem, "\n") {
		if len(l) > 20 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func secretsClient(t *testing.T, addr, dir, token string) *grpc.ClientConn {
	t.Helper()
	f := clientconn.Flags{CAFile: filepath.Join(dir, "ca.pem"), TokenFile: writeFile(t, filepath.Join(dir, "token-"+token[len(token)-6:]), token)}
	conn, err := f.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// driveSecrets lists the apps and runs each, recording every response and
// error.
func driveSecrets(t *testing.T, out *seen, conn *grpc.ClientConn) {
	t.Helper()
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	list, err := rc.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	out.add(prototext.Format(list), err)
	for _, app := range []string{"denied", "broken"} {
		s, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: app, UserId: "u"})
		out.add(prototext.Format(s), err)
		stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: app, UserId: "u", SessionId: s.GetSession().GetSessionId(), NewMessage: userText("hi")})
		out.add(err)
		for i := 0; err == nil && i < 100; i++ {
			var ev *servicev1.RunResponse
			ev, err = stream.Recv()
			out.add(prototext.Format(ev), err)
		}
		got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: "u", SessionId: s.GetSession().GetSessionId()})
		out.add(prototext.Format(got), err)
	}
}

// TestSecretsRefusedAtStartNotPrinted: a start that fails on a secret in
// the wrong place, or on a store or key that holds one, says why without
// the secret.
func TestSecretsRefusedAtStartNotPrinted(t *testing.T) {
	dir := t.TempDir()
	gemini := "AIzaSy" + canary(t, "")
	pgPass := canary(t, "")
	badKey := canary(t, "")
	t.Setenv(envConfig, "")
	pasted := writeFile(t, filepath.Join(dir, "pasted.yaml"), "models:\n  - {name: g, provider: gemini, api_key_env: "+gemini+"}\napps:\n  - name: a\n    root_agent: {name: r, llm: {model: g}}\n")
	pem := writeFile(t, filepath.Join(dir, "bad.key"), "-----BEGIN PRIVATE KEY-----\n"+badKey+"\n-----END PRIVATE KEY-----\n")
	devcertsDir := filepath.Join(dir, "certs")
	if err := devcerts.Generate(devcerts.Options{Dir: devcertsDir, Hosts: []string{"127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		args       []string
	}{
		{"pasted key", "looks like a Gemini", []string{"--config", pasted, "--data", filepath.Join(dir, "a.db")}},
		{"bad TLS key", "--tls-key", []string{"--data", filepath.Join(dir, "a.db"), "--tls-cert", filepath.Join(devcertsDir, "server.pem"), "--tls-key", pem}},
		{"postgres password", "PostgreSQL", []string{"--data", "postgres://u:" + pgPass + "@127.0.0.1:1/db?connect_timeout=5"}},
		{"postgres password parameter", "PostgreSQL", []string{"--data", "postgres://u@127.0.0.1:1/db?connect_timeout=5&password=" + pgPass}},
		{"malformed postgres URL", "PostgreSQL", []string{"--data", "postgres://u:" + pgPass + "@127.0.0.1:port/db"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A start that wrongly succeeds serves until this bound, then
			// fails the test for ending without an error.
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var stdout, stderr strings.Builder
			err := run(ctx, append(append(noConsole(), "--addr", "127.0.0.1:0"), c.args...), strings.NewReader(""), &stdout, &stderr)
			var out seen
			out.add(err, stdout.String(), stderr.String())
			exitCode(err, &out)
			if err == nil || !strings.Contains(out.String(), c.want) {
				t.Fatalf("serve = %v, want a failure saying %q", err, c.want)
			}
			out.mustNotHold(t, c.name, gemini, pgPass, badKey)
		})
	}
}

// TestPostgresPasswordNotLogged serves on PostgreSQL with a password in
// the URL, in its user part and as a parameter: the serving line shows
// the URL without it.
func TestPostgresPasswordNotLogged(t *testing.T) {
	url := pg.URL(t)
	pass := canary(t, "")
	t.Setenv(envConfig, "")
	for _, withPass := range []string{
		strings.Replace(url, "postgres://postgres@", "postgres://postgres:"+pass+"@", 1),
		url + "&password=" + pass,
	} {
		ctx, cancel := context.WithCancel(t.Context())
		_, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", withPass)
		cancel()
		var out seen
		out.add(<-exited, logs.String())
		if !strings.Contains(out.String(), `data="postgres://`) {
			t.Errorf("no serving line with the URL:\n%s", &out)
		}
		out.mustNotHold(t, "postgres", pass)
	}
}
