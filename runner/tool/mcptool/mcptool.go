// Package mcptool gives LLM agents the tools of MCP servers, through the
// official Go SDK's client: one session per server (a command over stdio,
// or a streamable HTTP endpoint), opened at start, reconnected when it
// drops, closed at shutdown. A tool call carries the run's deadline and
// cancellation, bounded by the server's timeout, and a stable idempotency
// key in its _meta. Results become function responses; MCP errors (a tool
// error, a dropped connection, a timeout) become error responses the model
// reads, and the run goes on.
//
// Imports: tool, model, the MCP SDK. It must not import the runner, agent
// implementations, plugin or gRPC (runner/deps_test.go checks).
package mcptool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTimeout bounds a tool call when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// IdempotencyKey is the _meta key of every call: session, invocation and
// call id, stable across retries of the same call.
const IdempotencyKey = "agentrunner/idempotency_key"

// Config is one MCP server.
type Config struct {
	// Name identifies the server in errors and logs.
	Name string
	// Command and Args run a server over stdio, with Env added to the
	// process's environment ("NAME=value").
	Command string
	Args    []string
	Env     []string
	// URL is a streamable HTTP endpoint, sent Headers.
	URL     string
	Headers map[string]string
	// Timeout bounds each call; zero means DefaultTimeout.
	Timeout time.Duration
}

// Server is a client session to one MCP server, and the tools it listed.
// It is safe for concurrent use.
type Server struct {
	cfg    Config
	client *mcp.Client
	log    *slog.Logger

	mu      sync.Mutex
	session *mcp.ClientSession // nil after it dropped, until the next call
	tools   []*mcp.Tool
}

// Connect opens a session to the server and lists its tools.
func Connect(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: log, client: mcp.NewClient(&mcp.Implementation{Name: "agentrunner", Version: "v1"}, nil)}
	sess, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			_ = sess.Close()
			return nil, fmt.Errorf("mcp server %s: list tools: %w", cfg.Name, err)
		}
		tools = append(tools, t)
	}
	s.session, s.tools = sess, tools
	return s, nil
}

// connect opens a new session.
func (s *Server) connect(ctx context.Context) (*mcp.ClientSession, error) {
	var t mcp.Transport
	switch {
	case s.cfg.Command != "":
		// The command lives as long as the session, not as the call that
		// opened it: its context must not be the caller's.
		cmd := exec.CommandContext(context.WithoutCancel(ctx), s.cfg.Command, s.cfg.Args...)
		cmd.Env = append(os.Environ(), s.cfg.Env...)
		cmd.Stderr = os.Stderr
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}
	case s.cfg.URL != "":
		t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: headers{s.cfg.Headers}}, DisableStandaloneSSE: true}
	default:
		return nil, fmt.Errorf("mcp server %s: neither a command nor a url", s.cfg.Name)
	}
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: connect: %w", s.cfg.Name, err)
	}
	return sess, nil
}

// live returns the current session, reconnecting when the last one
// dropped.
func (s *Server) live(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	sess, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "mcp server reconnected", "server", s.cfg.Name)
	s.session = sess
	return sess, nil
}

// dropped forgets sess after its connection closed, so that the next call
// reconnects.
func (s *Server) dropped(sess *mcp.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == sess {
		_ = sess.Close()
		s.session = nil
	}
}

// Close ends the session.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil {
		return nil
	}
	err := s.session.Close()
	s.session = nil
	return err
}

// call calls a tool with the server's timeout.
func (s *Server) call(ctx context.Context, name string, args map[string]any, key string) (*mcp.CallToolResult, error) {
	sess, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{IdempotencyKey: key}})
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		s.dropped(sess)
		return nil, fmt.Errorf("mcp server %s: connection lost during the call (the next call reconnects): %w", s.cfg.Name, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("mcp server %s: no answer within %s: %w", s.cfg.Name, s.cfg.Timeout, err)
	}
	return nil, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
}

// headers adds fixed headers to every request.
type headers struct{ h map[string]string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}
