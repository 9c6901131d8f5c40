package a2a

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
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
	// PublicURL, when set, is where clients reach the HTTP listener's
	// root (prefix included), such as "https://agents.example.com/ai":
	// the cards' HTTP URLs are built on it, whatever the request says,
	// and a shared cache may keep them.
	PublicURL string
	// PublicGRPCAddr, when set, is the gRPC interface's host:port on the
	// cards.
	PublicGRPCAddr string
	// TrustedProxies are the addresses whose Forwarded or
	// X-Forwarded-Host/-Proto headers say where the client reached the
	// server; from any other address those headers are ignored, so that
	// a client cannot name the host a card points other clients to.
	TrustedProxies []netip.Prefix
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

// serveCard answers the card of the path's app. Its URLs use
// HTTPConfig.PublicURL when set; else where the client says it reached
// the server (Forwarded or X-Forwarded-* from a trusted proxy, or the
// Host header), so that a card fetched through a name or a port forward
// points back the same way.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request, cfg HTTPConfig) {
	app := r.PathValue("app")
	origin, host := cardOrigin(r, cfg)
	grpcAddr := cmp.Or(cfg.PublicGRPCAddr, cfg.GRPCAddr)
	if cfg.PublicGRPCAddr == "" {
		if h, port, err := net.SplitHostPort(grpcAddr); err == nil && (h == "" || net.ParseIP(h).IsUnspecified()) {
			if reqHost, _, err := net.SplitHostPort(host); err == nil {
				grpcAddr = net.JoinHostPort(reqHost, port)
			}
		}
	}
	card, ok := h.Card(app, CardURLs{HTTPBase: origin + PathPrefix + app, GRPC: grpcAddr}, cfg)
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Sprintf("app %q is not served here", app))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if cfg.PublicURL != "" {
		w.Header().Set("Cache-Control", "public, max-age=300")
	} else {
		// Built from this request's headers: a shared cache must not
		// hand it to a client that came another way.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Vary", "Host, Forwarded, X-Forwarded-Host, X-Forwarded-Proto")
	}
	if err := json.NewEncoder(w).Encode(card); err != nil {
		h.log.Debug("write agent card", slog.String("app", app), slog.Any("err", err))
	}
}

// cardOrigin returns the scheme, host and prefix clients reach the
// listener's root at ("https://host:port/prefix"), and the host:port.
func cardOrigin(r *http.Request, cfg HTTPConfig) (origin, host string) {
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err == nil {
			return strings.TrimSuffix(cfg.PublicURL, "/"), u.Host
		}
	}
	scheme, host := "http", r.Host
	if r.TLS != nil || cfg.TLS {
		scheme = "https"
	}
	if fproto, fhost := forwarded(r, cfg.TrustedProxies); fhost != "" {
		host = fhost
		if fproto != "" {
			scheme = fproto
		}
	}
	return scheme + "://" + host + cfg.Prefix, host
}

// forwarded returns the protocol and host a trusted proxy says the
// client used (RFC 7239 Forwarded, else X-Forwarded-Proto and -Host; the
// first hop of each), or "" when r does not come from a trusted proxy or
// names none. A value that is not a plain host[:port] or http(s) is
// ignored.
func forwarded(r *http.Request, trusted []netip.Prefix) (proto, host string) {
	if len(trusted) == 0 {
		return "", ""
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(ap.Addr().Unmap()) }) {
		return "", ""
	}
	if f := r.Header.Get("Forwarded"); f != "" {
		first, _, _ := strings.Cut(f, ",")
		for _, pair := range strings.Split(first, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "host":
				host = v
			case "proto":
				proto = strings.ToLower(v)
			}
		}
	} else {
		host, _, _ = strings.Cut(r.Header.Get("X-Forwarded-Host"), ",")
		proto, _, _ = strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		host, proto = strings.TrimSpace(host), strings.ToLower(strings.TrimSpace(proto))
	}
	if proto != "" && proto != "http" && proto != "https" {
		proto = ""
	}
	if !plainHost(host) {
		return "", ""
	}
	return proto, host
}

// plainHost reports whether h is a host or host:port made of the
// characters a host name or an IP literal holds.
func plainHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for _, c := range h {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(".-:[]", c)
		if !ok {
			return false
		}
	}
	return true
}
