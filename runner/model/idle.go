package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultIdleTimeout is the idle timeout of a provider's model when its
// configuration sets none: a streaming provider sends something at least
// every few seconds while it works, so a minute of silence is a hang, yet
// a reasoning model thinking silently between chunks has room.
const DefaultIdleTimeout = 60 * time.Second

// IdleTimeout returns a transport that bounds the silence of a response
// once it has begun: from its headers to the first byte of its body, and
// between any two reads that bring data (a streamed chunk, part of a
// body). When d passes without data the request is cancelled and the body
// read fails with a retryable DEADLINE_EXCEEDED *Error that says so; the
// SDKs hand the read error back unchanged, so the provider's
// classification (Classify) finds it. The wait for the headers is left to
// the call's own timeout: a provider answering a call that is not streamed
// sends them only once the whole answer is ready.
//
// It works at the transport rather than on the responses a model yields
// because not every chunk yields one (a streamed tool call's arguments
// arrive silently), and a chunk is data all the same. A d of zero or less
// returns base; a nil base means http.DefaultTransport.
func IdleTimeout(base http.RoundTripper, d time.Duration) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if d <= 0 {
		return base
	}
	return idleTransport{base: base, d: d}
}

// errIdle is the cause the request's context is cancelled with when the
// response fell silent.
var errIdle = errors.New("idle timeout")

type idleTransport struct {
	base http.RoundTripper
	d    time.Duration
}

func (t idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return resp, err
	}
	b := &idleBody{body: resp.Body, ctx: ctx, cancel: cancel, d: t.d}
	b.timer = time.AfterFunc(t.d, func() { cancel(errIdle) })
	resp.Body = b
	return resp, nil
}

// idleBody is a response body whose reads restart the idle timer.
type idleBody struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	d      time.Duration
	timer  *time.Timer
	once   sync.Once
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	if err != nil && err != io.EOF && context.Cause(b.ctx) == errIdle {
		err = &Error{Code: CodeDeadlineExceeded, Retryable: true,
			Err: fmt.Errorf("no data from the model for %v (idle timeout): %w", b.d, err)}
	}
	return n, err
}

func (b *idleBody) Close() error {
	err := b.body.Close()
	b.once.Do(func() {
		b.timer.Stop()
		b.cancel(nil)
	})
	return err
}

// IdleClient returns the HTTP client a provider's SDK is given: hc (a new
// client when nil) with IdleTimeout(d) on its transport. The bound goes on
// a copy, so that a client the caller configured is never changed under
// them; a d of zero or less returns hc as it is.
func IdleClient(hc *http.Client, d time.Duration) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	if d <= 0 {
		return hc
	}
	c := *hc
	c.Transport = IdleTimeout(hc.Transport, d)
	return &c
}
