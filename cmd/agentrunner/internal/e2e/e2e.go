// Package e2e is the one end-to-end harness of agentrunner, after etcd's
// tests/framework: a feature test is written once against a Target and
// runs both against a server in this process, built the way `agentrunner
// serve` builds it, and against the built binary started as a process on
// loopback ports. The in-process target needs package main's run, so it
// lives in cmd/agentrunner's e2e_test.go; the binary target is here, and
// this package's own test runs the features against it.
//
// AGENTRUNNER_E2E selects the ways: inprocess, binary, or both (the
// default, so CI runs both). The package is test code: nothing of the
// shipped binary imports it.
package e2e

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// EnvModes names the variable that selects the ways the features run.
const EnvModes = "AGENTRUNNER_E2E"

// Target starts agentrunner one way and runs its commands that way.
type Target interface {
	// Serve starts `agentrunner serve` with the given flags after
	// `--addr 127.0.0.1:0 --http-addr ""` (the last of a flag wins), once
	// it serves, and stops it when the test ends.
	Serve(t *testing.T, args ...string) *Server
	// CLI runs `agentrunner ARGS...` to its end: stdout, stderr, exit code.
	CLI(t *testing.T, args ...string) (stdout, stderr string, code int)
}

// Server is one serving agentrunner.
type Server struct {
	Addr string           // the gRPC listener, host:port
	HTTP string           // the HTTP listener's base URL; "" when it is off
	Conn *grpc.ClientConn // a client connection to Addr
	stop func() error
	logs func() string
}

// NewServer is for a Target: a Server on addr whose Stop calls stop, once.
// It dials addr and closes the connection when the test ends.
func NewServer(t *testing.T, addr, http string, stop func() error, logs func() string) *Server {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: addr, HTTP: http, Conn: conn, logs: logs}
	var stopped bool
	var stopErr error
	s.stop = func() error {
		if !stopped {
			stopped = true
			stopErr = stop()
		}
		return stopErr
	}
	t.Cleanup(func() {
		conn.Close()
		if err := s.stop(); err != nil {
			t.Errorf("serve: %v\n%s", err, s.Logs())
		}
	})
	return s
}

// Stop stops the server as SIGTERM would (runs still going after the
// drain are interrupted) and fails the test if it did not end cleanly.
func (s *Server) Stop(t *testing.T) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.Logs())
	}
}

// Logs returns what the server logged so far.
func (s *Server) Logs() string { return s.logs() }

// Runner, Sessions and Usage are clients of the server's services.
func (s *Server) Runner() servicev1.RunnerServiceClient {
	return servicev1.NewRunnerServiceClient(s.Conn)
}

func (s *Server) Sessions() servicev1.SessionServiceClient {
	return servicev1.NewSessionServiceClient(s.Conn)
}

func (s *Server) Usage() servicev1.UsageServiceClient { return servicev1.NewUsageServiceClient(s.Conn) }

// ServeFlags are the flags every start begins with: loopback ports the
// kernel picks, and no HTTP listener, whose default port (8080) is one
// for the whole machine.
func ServeFlags() []string {
	return []string{"serve", "--addr", "127.0.0.1:0", "--http-addr", ""}
}

// Wants reports whether AGENTRUNNER_E2E selects mode (inprocess or
// binary); unset or "both" selects both.
func Wants(mode string) bool {
	v := strings.TrimSpace(os.Getenv(EnvModes))
	return v == "" || v == "both" || v == mode
}

// Feature is one end-to-end test.
type Feature struct {
	Name string
	Test func(t *testing.T, tg Target)
}

// Run runs every feature against tg, each in a subtest of its name, with
// no model credentials from the developer's shell and no apps file from
// the environment: a feature says what it serves.
func Run(t *testing.T, tg Target) {
	for _, f := range Features {
		t.Run(f.Name, func(t *testing.T) {
			for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
				"AGENTRUNNER_CONFIG", "AGENTRUNNER_AUTH_FILE", "AGENTRUNNER_HTTP_PREFIX"} {
				t.Setenv(k, "")
			}
			f.Test(t, tg)
		})
	}
}
