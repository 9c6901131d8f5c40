package a2a

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/agentrunner/agentrunner/server/auth"
)

// PathPrefix is where the HTTP listener serves A2A: /a2a/{app}/ under
// --http-prefix.
const PathPrefix = "/a2a/"

// Paths of one app's HTTP bindings, under PathPrefix+app.
const (
	JSONRPCPath = "/jsonrpc"
	RESTPath    = "/rest"
)

// HTTPConfig configures HTTP.
type HTTPConfig struct {
	// Prefix is the HTTP listener's --http-prefix ("" or "/x"): the cards'
	// URLs carry it; the requests come with it stripped.
	Prefix string
	// GRPCAddr is the gRPC listener's host:port, for the cards' gRPC
	// interface; "" leaves the gRPC binding out of them.
	GRPCAddr string
	// TLS says whether both listeners serve TLS; MTLS whether client
	// certificates are asked for.
	TLS, MTLS bool
	// Auth is the auth file: the cards declare the schemes it implies.
	Auth *auth.Config
	// MaxRequestBytes bounds a request body; zero means 32 MiB.
	MaxRequestBytes int
	// Version is the agents' version on the cards.
	Version string
}

// HTTP returns the handler of every app's cards and HTTP bindings, for
// requests whose path starts with PathPrefix:
//
//	GET  /a2a/{app}/.well-known/agent-card.json   the card (public)
//	POST /a2a/{app}/jsonrpc                       JSON-RPC binding
//	     /a2a/{app}/rest/…                        HTTP+JSON (REST) binding
//
// The bindings authenticate their caller as the gRPC port does (bearer
// token, else client certificate); the card needs no credentials, as the
// protocol wants: it is how a client learns which ones to send.
func (h *Handler) HTTP(cfg HTTPConfig) http.Handler {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 32 << 20
	}
	panics := a2asrv.WithTransportPanicHandler(func(r any) error {
		h.log.Error("panic in A2A handler", "panic", r, "stack", string(debug.Stack()))
		return a2a.ErrInternalError
	})
	jsonrpc := a2asrv.NewJSONRPCHandler(h, panics)
	rest := a2asrv.NewRESTHandler(h, panics)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathPrefix+"{app}"+a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) {
		h.serveCard(w, r, cfg)
	})
	mux.Handle("POST "+PathPrefix+"{app}"+JSONRPCPath, h.authenticated(cfg, jsonrpc, ""))
	mux.Handle(PathPrefix+"{app}"+RESTPath+"/", h.authenticated(cfg, rest, RESTPath))
	return mux
}

// authenticated serves next for the path's app as an authenticated
// caller, with the path up to strip taken off.
func (h *Handler) authenticated(cfg HTTPConfig, next http.Handler, strip string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app := r.PathValue("app")
		if _, ok := h.s.Apps().Lookup(app); !ok {
			httpError(w, http.StatusNotFound, fmt.Sprintf("app %q is not served here", app))
			return
		}
		ctx, err := h.s.AuthenticateHTTP(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			_, msg := statusMessage(err)
			httpError(w, http.StatusUnauthorized, msg)
			return
		}
		r = r.WithContext(withApp(ctx, app))
		r.Body = http.MaxBytesReader(w, r.Body, int64(cfg.MaxRequestBytes))
		if strip != "" {
			r = r.Clone(r.Context())
			cut := PathPrefix + app + strip
			r.URL.Path = strings.TrimPrefix(r.URL.Path, cut)
			r.URL.RawPath = ""
		}
		next.ServeHTTP(w, r)
	})
}

func statusMessage(err error) (string, string) {
	s := err.Error()
	_, msg, _ := strings.Cut(s, "desc = ")
	return s, msg
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// serveCard answers the card of the path's app. Its URLs use the host the
// client reached, so that a card fetched through a name or a port
// forward points back the same way.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request, cfg HTTPConfig) {
	app := r.PathValue("app")
	scheme := "http"
	if r.TLS != nil || cfg.TLS {
		scheme = "https"
	}
	grpcAddr := cfg.GRPCAddr
	if host, port, err := net.SplitHostPort(grpcAddr); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
		if reqHost, _, err := net.SplitHostPort(r.Host); err == nil {
			grpcAddr = net.JoinHostPort(reqHost, port)
		}
	}
	card, ok := h.Card(app, CardURLs{HTTPBase: scheme + "://" + r.Host + cfg.Prefix + PathPrefix + app, GRPC: grpcAddr}, cfg)
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("app %q is not served here", app))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if err := json.NewEncoder(w).Encode(card); err != nil {
		h.log.Debug("write agent card", slog.String("app", app), slog.Any("err", err))
	}
}
