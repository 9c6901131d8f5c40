package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/agentrunner/agentrunner/runner/model"
)

// APIError is an error response from the Gemini API: an HTTP error status,
// or an error event inside a stream. Callers get it with errors.As, so that
// code outside this package can tell a quota error from a bad request without
// importing genai.
type APIError struct {
	// Model is the model the call was made to.
	Model string
	// Code is the HTTP status code, for example 429.
	Code int
	// Status is the API's status name, for example "RESOURCE_EXHAUSTED" or
	// "INVALID_ARGUMENT". When the body was not a JSON error it is the HTTP
	// status line instead, for example "502 Bad Gateway".
	Status string
	// Message is the API's explanation.
	Message string
	// Details holds the API's structured error details, if any.
	Details []map[string]any

	err error // the genai error, for errors.As on genai.APIError
}

func (e *APIError) Error() string {
	msg := strings.TrimSpace(e.Message)
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	// A status taken from the HTTP status line repeats the code.
	status := strings.TrimPrefix(e.Status, strconv.Itoa(e.Code)+" ")
	if status == "" {
		status = "UNKNOWN"
	}
	return fmt.Sprintf("gemini model %q: HTTP %d %s: %s", e.Model, e.Code, status, msg)
}

// Unwrap returns the underlying genai error.
func (e *APIError) Unwrap() error { return e.err }

// Retryable reports whether the same request may succeed later: rate limits
// and quota (429), timeouts (408) and server errors (5xx). Client errors such
// as INVALID_ARGUMENT will fail again.
func (e *APIError) Retryable() bool {
	return e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout || e.Code >= 500
}

// wrapError turns an error from the genai client into one that reads clearly
// and keeps what callers branch on: a *model.Error with the stable code
// (and, for API error responses, an *APIError inside), and ctx.Err() in the
// chain when the call was cancelled, whatever error the transport happened
// to report for the aborted read. header is that of the HTTP error
// response, when the transport recorded one (header.go), for its
// Retry-After.
func wrapError(ctx context.Context, modelName string, header http.Header, err error) error {
	if err == nil {
		return nil
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return classified(newAPIError(modelName, apiErr, err), header)
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) && apiErrPtr != nil {
		return classified(newAPIError(modelName, *apiErrPtr, err), header)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("gemini model %q: %w", modelName, err)
		}
		return fmt.Errorf("gemini model %q: %w (%v)", modelName, ctxErr, err)
	}
	return unexpected(fmt.Errorf("gemini model %q: %w", modelName, err))
}

// unexpected classifies an error that is neither the API's nor the
// caller's: a dropped connection, a body that does not decode, a panic in
// genai over an odd answer. Each is a fault of that attempt, which a later
// one may not repeat.
func unexpected(err error) *model.Error {
	me := model.Classify(err)
	if me.Code == model.CodeUnavailable {
		me.Retryable = true
	}
	return me
}

// classified returns e as a *model.Error, which the retry package acts on;
// errors.As still finds the *APIError inside. The wait it asks for is the
// longer of the response's Retry-After header (nil header: none) and the
// RetryInfo detail of its body: either is the server saying "not before".
func classified(e *APIError, header http.Header) *model.Error {
	me := model.HTTPError(e.Code, header, time.Now(), e)
	me.RetryAfter = max(me.RetryAfter, retryDelay(e.Details))
	return me
}

// retryDelay reads the wait a 429 asks for from its google.rpc.RetryInfo
// detail ("retryDelay": "37s"), which is where the Gemini API says it; a
// proxy or gateway in front of it says it in a Retry-After header instead.
func retryDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		if t, _ := d["@type"].(string); !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if v, err := time.ParseDuration(s); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

func newAPIError(modelName string, e genai.APIError, wrapped error) *APIError {
	return &APIError{Model: modelName, Code: e.Code, Status: e.Status, Message: e.Message, Details: e.Details, err: wrapped}
}
