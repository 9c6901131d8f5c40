// Package web serves agentrunner over HTTP: every RPC of a grpc.Server
// over Connect, gRPC-Web and gRPC (h2c, or HTTP/2 over TLS), and the web
// console's files, from one handler on one port (`serve --http-addr`).
//
// The RPCs go through vanguard's transcoder into the grpc.Server's
// ServeHTTP, so the same handlers and the same interceptors (logging,
// recovery, auth, limits, telemetry) answer them as on the gRPC port.
// The gRPC port keeps grpc-go's own transport (grpc.Server.Serve): the
// ServeHTTP path is several times slower per call, which a browser
// console does not notice but a gRPC client would.
//
// A2A's HTTP bindings and agent cards (package server/a2a), when
// Config.A2A is set, answer every path under /a2a/; the gRPC binding is
// on the grpc.Server itself.
//
// Everything else that is not an RPC is the console (see package
// server/console): its files, and index.html for any other GET path, so
// that deep links load the page.
package web

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"connectrpc.com/vanguard"
	"connectrpc.com/vanguard/vanguardgrpc"
	"google.golang.org/grpc"
)

// Config configures New and Handler.
type Config struct {
	// GRPC is the server whose services are served. Required.
	GRPC *grpc.Server
	// MaxMessageBytes bounds a message vanguard buffers to transcode it
	// (Connect or gRPC-Web to gRPC); zero means 4 MiB. Give the
	// grpc.Server's own limit, so that both paths take the same messages.
	MaxMessageBytes int
	// Prefix mounts everything under a path, such as "/agentrunner",
	// for a reverse proxy; "" mounts at the root. It must be what
	// CleanPrefix returns.
	Prefix string
	// Console holds the console's files, with index.html at its root.
	// Required.
	Console fs.FS
	// TLS, when not nil, serves HTTPS (HTTP/1.1 and HTTP/2) with it;
	// else plain HTTP/1.1 and h2c. It is cloned, not changed.
	TLS *tls.Config
	// A2A, when not nil, serves every path under /a2a/ (after Prefix):
	// A2A's JSON-RPC and REST bindings and agent cards (server/a2a.Handler.HTTP).
	A2A http.Handler
	// Logger receives net/http's own errors (a failed TLS handshake, a
	// malformed request); nil means slog.Default().
	Logger *slog.Logger
	// Authenticate, when not nil, is asked about every request for an
	// RPC before its body is read: an error refuses the call as
	// Unauthenticated, with the error's text. It answers who the caller
	// is, not what it may do: the grpc.Server's interceptors still
	// authorize every call. nil means no authentication.
	Authenticate func(*http.Request) error
	// LoopbackHosts refuses a request whose Host is not localhost, a
	// loopback address or one of AllowedHosts (403). Set it for a
	// loopback listener without authentication: a web page whose own
	// domain resolves to 127.0.0.1 (DNS rebinding) is otherwise the same
	// origin as the console, and could read and write every session.
	LoopbackHosts bool
	// AllowedHosts are the host names (without port) LoopbackHosts lets
	// through besides loopback ones: a reverse proxy's public name.
	AllowedHosts []string
	// MaxRequestBytes bounds one request message on every binding
	// (Connect, gRPC-Web, gRPC, A2A's JSON-RPC and REST bodies); zero
	// means MaxMessageBytes. Give the grpc.Server's receive limit.
	MaxRequestBytes int
	// BodyTimeout bounds how long a client may take to send a request's
	// body, once its headers are in; zero means no bound.
	BodyTimeout time.Duration
	// ReadHeaderTimeout and IdleTimeout replace readHeaderTimeout and
	// idleTimeout when not zero.
	ReadHeaderTimeout, IdleTimeout time.Duration
	// MaxConns caps the connections open at once; the next waits in the
	// listen queue. Zero means no cap.
	MaxConns int
}

// defaultMaxMessageBytes is vanguard's own bound on a message it buffers,
// used when Config.MaxMessageBytes is zero.
const defaultMaxMessageBytes = 4 << 20

// readHeaderTimeout bounds how long a client may take to send a
// request's headers: a slow or idle client cannot hold a connection
// forever. There is no write timeout: a Run stream lasts as long as the
// run.
const readHeaderTimeout = 10 * time.Second

// idleTimeout closes keep-alive connections no request has used for a
// while, so that abandoned browser tabs do not pin connections.
const idleTimeout = 2 * time.Minute

// Handler returns the handler that serves the RPCs of cfg.GRPC and the
// console under cfg.Prefix.
func Handler(cfg Config) (http.Handler, error) {
	if cfg.GRPC == nil || cfg.Console == nil {
		return nil, errors.New("web: Config.GRPC and Config.Console are required")
	}
	if p, err := CleanPrefix(cfg.Prefix); err != nil || p != cfg.Prefix {
		return nil, fmt.Errorf("web: prefix %q is not clean (CleanPrefix)", cfg.Prefix)
	}
	pages, err := newPages(cfg.Console, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	opts := []vanguard.TranscoderOption{vanguard.WithUnknownHandler(pages), vanguard.WithCodec(newJSONCodec)}
	if cfg.MaxMessageBytes > 0 {
		opts = append(opts, vanguard.WithDefaultServiceOptions(vanguard.WithMaxMessageBufferBytes(uint32(cfg.MaxMessageBytes))))
	}
	// No JSON codec is registered with grpc-go (the server forces its
	// own proto codec), so vanguard turns Connect JSON into proto here
	// and the handlers see what the gRPC port gives them.
	tr, err := vanguardgrpc.NewTranscoder(cfg.GRPC, opts...)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	limit := requestLimit(cfg)
	g, err := newGate(cfg.GRPC, limit, cfg.Authenticate, tr, pages)
	if err != nil {
		return nil, err
	}
	g.bodyTimeout = cfg.BodyTimeout
	a2a := cfg.A2A
	if a2a != nil {
		a2a = &a2aDoor{next: a2a, limit: int64(limit), authenticate: cfg.Authenticate, bodyTimeout: cfg.BodyTimeout}
	}
	h := mount(cfg.Prefix, withA2A(a2a, unaryConnect(g)))
	// A browser sends a form-like POST (text/plain) to any site without
	// asking first, and A2A's JSON-RPC reads its body whatever its type:
	// without this, any page the user visits could run the user's agents
	// (and spend on them). Same-origin requests, the console's, and
	// clients that are not browsers (no Sec-Fetch-Site or Origin) pass.
	h = http.NewCrossOriginProtection().Handler(h)
	if cfg.LoopbackHosts {
		h = loopbackHosts(h, cfg.AllowedHosts)
	}
	if cfg.Logger != nil {
		h = accessLog(cfg.Logger, h)
	}
	return h, nil
}

// requestLimit is the most bytes one request message may take.
func requestLimit(cfg Config) int {
	limit := cfg.MaxMessageBytes
	if limit <= 0 {
		limit = defaultMaxMessageBytes
	}
	if cfg.MaxRequestBytes > 0 && cfg.MaxRequestBytes < limit {
		limit = cfg.MaxRequestBytes
	}
	return limit
}

// loopbackHosts answers 403 to a request whose Host is not localhost or a
// loopback IP (see Config.LoopbackHosts).
func loopbackHosts(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLoopbackHost(r.Host) && !isAllowedHost(r.Host, allowed) {
			http.Error(w, fmt.Sprintf("host %q is not this server's: a server without authentication answers only localhost, loopback addresses and --http-allowed-hosts", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackHost reports whether a request's Host (host or host:port)
// names this machine's loopback interface.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isAllowedHost reports whether a request's Host (host or host:port) is
// one of allowed, without case.
func isAllowedHost(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	for _, a := range allowed {
		if strings.EqualFold(host, a) {
			return true
		}
	}
	return false
}

// withA2A sends the paths under /a2a/ to a2a, the others to next. The
// RPC paths ("/agentrunner.service.v1.…/…") and the console's never start
// so.
func withA2A(a2a, next http.Handler) http.Handler {
	if a2a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/a2a/") {
			a2a.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// unaryConnect marks a POST of a unary Connect call (a body of type
// application/json or application/proto to an RPC's path) that lacks the
// Connect-Protocol-Version header as the Connect call it is. The Connect
// protocol lets a server require the header, and connect-go's handlers
// do not; nor do the calls people type with curl. Without it vanguard
// does not recognise the protocol, and the call was answered "not an RPC
// this server serves" (404) for an RPC the server serves.
func unaryConnect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Connect-Protocol-Version") == "" &&
			isUnaryConnectType(r.Header.Get("Content-Type")) && rpcPath.MatchString(r.URL.Path) {
			r.Header.Set("Connect-Protocol-Version", "1")
		}
		next.ServeHTTP(w, r)
	})
}

// isUnaryConnectType reports whether ct is the content type of a unary
// Connect call's body, parameters such as charset aside.
func isUnaryConnectType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	switch strings.TrimSpace(mt) {
	case "application/json", "application/proto":
		return true
	}
	return false
}

// Server is the HTTP server of Handler.
type Server struct {
	hs       *http.Server
	tls      bool
	maxConns int
}

// New returns a Server; Serve starts it.
func New(cfg Config) (*Server, error) {
	h, err := Handler(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cmp.Or(cfg.ReadHeaderTimeout, readHeaderTimeout),
		IdleTimeout:       cmp.Or(cfg.IdleTimeout, idleTimeout),
		Protocols:         &protocols,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	if cfg.TLS != nil {
		protocols.SetHTTP2(true)
		// ServeTLS adds h2 and http/1.1 to the clone's ALPN protocols.
		hs.TLSConfig = cfg.TLS.Clone()
	} else {
		// h2c, so that grpc-go clients and grpcurl -plaintext reach
		// this port as well as browsers.
		protocols.SetUnencryptedHTTP2(true)
	}
	return &Server{hs: hs, tls: cfg.TLS != nil, maxConns: cfg.MaxConns}, nil
}

// Serve serves on lis until Shutdown; it returns nil after Shutdown and
// the listener's error otherwise.
func (s *Server) Serve(lis net.Listener) error {
	if s.maxConns > 0 {
		lis = limitListener(lis, s.maxConns)
	}
	var err error
	if s.tls {
		err = s.hs.ServeTLS(lis, "", "")
	} else {
		err = s.hs.Serve(lis)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for the requests in
// flight, streams included, until ctx is done; then it closes the
// connections left and returns ctx's error.
//
// Call it before the grpc.Server's GracefulStop: on the ServeHTTP path
// grpc-go cannot drain a stream, it cuts it off, so the streams must
// have ended here first.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.hs.Shutdown(ctx)
	if err != nil {
		_ = s.hs.Close()
	}
	return err
}

// URL is the console's address on lis: scheme, the bound host and port,
// and the prefix, with a trailing slash.
func URL(lis net.Addr, tls bool, prefix string) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + lis.String() + prefix + "/"
}

// CleanPrefix checks a --http-prefix and returns it in the form Config
// takes: "" for none (also for "/"), else a path that starts with a
// slash and does not end with one ("/agentrunner/" becomes
// "/agentrunner"). It refuses what a URL path would not carry as is:
// empty, "." and ".." segments, and characters outside letters, digits
// and "-._~/", so the prefix matches the raw request path exactly.
func CleanPrefix(p string) (string, error) {
	if p == "" || p == "/" {
		return "", nil
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("prefix %q must start with /", p)
	}
	trimmed := strings.TrimSuffix(p, "/")
	if trimmed == "/" || path.Clean(trimmed) != trimmed {
		return "", fmt.Errorf("prefix %q has an empty, . or .. segment", p)
	}
	for _, r := range trimmed {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~/", r)
		if !ok {
			return "", fmt.Errorf("prefix %q has %q; use letters, digits and -._~/", p, r)
		}
	}
	return trimmed, nil
}

// mount serves h under prefix and nothing outside it. The bare prefix
// redirects to prefix/, so that the page's relative URLs resolve under
// it.
func mount(prefix string, h http.Handler) http.Handler {
	if prefix == "" {
		return h
	}
	strip := http.StripPrefix(prefix, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, prefix+"/"):
			strip.ServeHTTP(w, r)
		case r.URL.Path == prefix && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			to := prefix + "/"
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusMovedPermanently)
		default:
			http.NotFound(w, r)
		}
	})
}
