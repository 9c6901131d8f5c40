// Package webhook calls back the URL a run names (agentrunner.v1.Webhook)
// when the run stops: it checks URLs against the hosts the server allows
// (Allow), signs deliveries (Sign), and delivers the store's outbox
// (store.WebhookOutbox) with retries (Worker). It sits under runner/
// because the apps loader checks an app's webhook with it, and runner/
// must not import the server. It must not import gRPC, the runner or
// the server: only the messages and store.
//
// What a receiver gets: a POST of the run record as the JSON of
// agentrunner.v1.Run, with the headers
//
//	Agentrunner-Delivery-Id: <id>    the same on every attempt: the idempotency key
//	Agentrunner-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// Any 2xx answer delivers it; anything else, or no answer within the
// attempt's timeout, is retried with exponential backoff and jitter until
// the retry bound passes, then the delivery is kept as failed.
package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// MaxURLBytes bounds a webhook URL.
const MaxURLBytes = 2048

// Allow is the hosts webhooks may call. An entry is a host name or IP
// address, matching it on any port ("hooks.example.com", "127.0.0.1",
// "::1"), a host and port matching only that port
// ("hooks.example.com:8443", "[::1]:9000"), or "*." and a domain,
// matching the domain's subdomains but not the domain itself
// ("*.example.com"). Names compare without case. The zero Allow allows
// nothing: webhooks are off.
type Allow struct {
	entries []string // lowercased, IPv6 without brackets unless with a port
}

// ParseAllow parses the entries of an allow list; empty entries are
// skipped.
func ParseAllow(entries []string) (Allow, error) {
	var a Allow
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if strings.ContainsAny(e, "/?#@ ") {
			return Allow{}, fmt.Errorf("webhook host %q: a host, host:port or *.domain, not a URL", e)
		}
		if h, p, err := net.SplitHostPort(e); err == nil {
			if h == "" || p == "" || strings.HasPrefix(h, "*") {
				return Allow{}, fmt.Errorf("webhook host %q: empty host or port, or a wildcard with a port", e)
			}
		} else {
			e = strings.Trim(e, "[]")
		}
		if strings.HasPrefix(e, "*.") && len(e) == 2 {
			return Allow{}, fmt.Errorf("webhook host %q: a wildcard needs a domain", e)
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

// Empty reports whether a allows no host at all.
func (a Allow) Empty() bool { return len(a.entries) == 0 }

// String lists the entries, comma-separated.
func (a Allow) String() string { return strings.Join(a.entries, ",") }

// ErrNotAllowed is what Check returns, wrapped, for a URL to a host the
// list does not name.
var ErrNotAllowed = errors.New("host not allowed")

// Check reports why raw is no URL a webhook may call: not absolute http
// or https, credentials in it, too long, or its host not allowed
// (ErrNotAllowed).
func (a Allow) Check(raw string) error {
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("webhook url is %d bytes, more than %d", len(raw), MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("webhook url %q: the scheme must be http or https", raw)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("webhook url %q has no host", raw)
	case u.User != nil:
		return fmt.Errorf("webhook url %q: credentials in the URL are refused; deliveries are signed instead", raw)
	}
	if !a.allows(u) {
		// The list itself is not told: it may name internal hosts.
		return fmt.Errorf("webhook url %q: %w by the server (--webhook-allow-hosts)", raw, ErrNotAllowed)
	}
	return nil
}

// allows reports whether u's host (and port) is one a names.
func (a Allow) allows(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	hostPort := net.JoinHostPort(host, port)
	return slices.ContainsFunc(a.entries, func(e string) bool {
		switch {
		case e == host || e == hostPort:
			return true
		case strings.HasPrefix(e, "*."):
			return strings.HasSuffix(host, e[1:])
		}
		return false
	})
}
