package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stable codes a failed model call ends with. They name what the caller
// can do about it, whatever the provider: wait (RESOURCE_EXHAUSTED), try
// again later (UNAVAILABLE, DEADLINE_EXCEEDED), fix the request
// (INVALID_ARGUMENT) or the credentials (PERMISSION_DENIED). A failed call
// never ends with UNKNOWN: what no provider explains is UNAVAILABLE.
const (
	CodeResourceExhausted = "RESOURCE_EXHAUSTED"
	CodeUnavailable       = "UNAVAILABLE"
	CodeDeadlineExceeded  = "DEADLINE_EXCEEDED"
	CodeInvalidArgument   = "INVALID_ARGUMENT"
	CodePermissionDenied  = "PERMISSION_DENIED"
)

// Error is a failed model call with what a retry policy branches on. A
// provider returns it (wrapping its SDK's error, which errors.As still
// reaches) so that code outside the provider can tell a rate limit from a
// bad request without importing the SDK.
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Retryable reports whether the same request may succeed later: rate
	// limits, server errors, dropped connections, timeouts.
	Retryable bool
	// RetryAfter is how long the provider asked to wait before the next
	// attempt (Retry-After), zero when it did not say.
	RetryAfter time.Duration
	// Err is the provider's error; its text is the Error's text.
	Err error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "model call failed: " + e.Code
	}
	return e.Err.Error()
}

// Unwrap returns the provider's error.
func (e *Error) Unwrap() error { return e.Err }

// CredentialsError is a model that cannot be called because the server's
// environment lacks its credentials. It is found at start, so that the
// apps using the model are served as unavailable with its text as the
// reason, rather than failing each run in band.
type CredentialsError struct {
	// Model is the name agents use; Provider the provider's name.
	Model, Provider string
	// Set says what to set, for example "OPENAI_API_KEY".
	Set string
}

func (e *CredentialsError) Error() string {
	return fmt.Sprintf("model %s (%s) needs %s set", e.Model, e.Provider, e.Set)
}

// HTTPError classifies an HTTP error status of a provider's API: 429 is
// RESOURCE_EXHAUSTED, 408 and 504 DEADLINE_EXCEEDED, other 5xx (and the
// 529 "overloaded" some providers send) UNAVAILABLE, all retryable; 401 and
// 403 PERMISSION_DENIED; any other 4xx INVALID_ARGUMENT (a 404 is a model
// id the provider does not know). header may be nil; its Retry-After is
// read relative to now.
func HTTPError(status int, header http.Header, now time.Time, err error) *Error {
	e := &Error{Err: err, RetryAfter: RetryAfter(header, now)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Code, e.Retryable = CodeResourceExhausted, true
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Code, e.Retryable = CodeDeadlineExceeded, true
	case status >= 500:
		e.Code, e.Retryable = CodeUnavailable, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code = CodePermissionDenied
	case status >= 400:
		e.Code = CodeInvalidArgument
	default:
		// Not an error status, yet reported as an error: the provider's
		// answer made no sense, which a later attempt may not repeat.
		e.Code, e.Retryable = CodeUnavailable, true
	}
	return e
}

// maxRetryAfter bounds a Retry-After header: a server asking for hours is
// answered by the retry policy's own bounds, not believed.
const maxRetryAfter = 24 * time.Hour

// RetryAfter reads how long a response asks the client to wait: the
// retry-after-ms header some providers send, else Retry-After in seconds or
// as an HTTP date. It returns zero when the header is absent or unreadable.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return min(time.Duration(ms*float64(time.Millisecond)), maxRetryAfter)
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return min(time.Duration(s*float64(time.Second)), maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}

// Classify returns err as an *Error: the one in its chain when a provider
// classified it, else a classification of what the transport reported. A
// dropped connection, a reset, a response cut short and a body that is not
// valid JSON are UNAVAILABLE and retryable; a timeout is DEADLINE_EXCEEDED
// and retryable. Whatever else is left is UNAVAILABLE and not retried,
// since nothing says a second attempt would do better. Classify returns nil
// for a nil err. It does not look at the caller's context: whether the
// caller gave up is for the caller to check first, since a cancelled call is
// its decision and not a model failure.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	e := &Error{Code: CodeUnavailable, Err: err}
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.Code, e.Retryable = CodeDeadlineExceeded, true
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Code, e.Retryable = CodeDeadlineExceeded, true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.As(err, &netErr), errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		e.Retryable = true
	}
	return e
}

// Unavailable returns a retryable UNAVAILABLE error: the provider answered
// with something it should not have (a stream that ended early, a body the
// SDK could not read).
func Unavailable(format string, args ...any) *Error {
	return &Error{Code: CodeUnavailable, Retryable: true, Err: fmt.Errorf(format, args...)}
}
