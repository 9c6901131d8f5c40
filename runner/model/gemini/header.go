package gemini

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
)

// genai's APIError carries the status and the JSON body of an error
// response but not its headers, so an HTTP Retry-After would be lost. The
// model therefore wraps the transport of the client it creates: for a call
// made with a context from withErrorHeader, the transport keeps the header
// of an error response (status 400 or more) where wrapError reads it.
// The recorder travels in the request's context because genai builds the
// request itself; the context is the one thing of ours it passes on.

type headerKey struct{}

// errorHeader holds the header of the last error response of one call.
type errorHeader struct {
	mu sync.Mutex
	h  http.Header
}

func (e *errorHeader) set(h http.Header) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.h = h.Clone()
}

func (e *errorHeader) get() http.Header {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.h
}

// withErrorHeader returns ctx carrying a fresh recorder for one call.
func withErrorHeader(ctx context.Context) (context.Context, *errorHeader) {
	rec := &errorHeader{}
	return context.WithValue(ctx, headerKey{}, rec), rec
}

// headerTransport records error responses' headers for the calls that
// asked for it (see withErrorHeader).
type headerTransport struct {
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil && resp.StatusCode >= 400 {
		if rec, ok := req.Context().Value(headerKey{}).(*errorHeader); ok {
			rec.set(resp.Header)
		}
	}
	return resp, err
}

// wrapTransport installs headerTransport on hc, over the idle bound
// (model.IdleTimeout; none for idle zero). hc must be a client this
// package created (or genai created for it): a client the caller passed
// in is theirs and is left alone.
func wrapTransport(hc *http.Client, idle time.Duration) {
	if hc == nil {
		return
	}
	hc.Transport = headerTransport{base: model.IdleTimeout(hc.Transport, idle)}
}
