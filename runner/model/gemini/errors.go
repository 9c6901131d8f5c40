package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/genai"
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
// and keeps what callers branch on: an *APIError for API error responses, and
// ctx.Err() in the chain when the call was cancelled, whatever error the
// transport happened to report for the aborted read.
func wrapError(ctx context.Context, modelName string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return newAPIError(modelName, apiErr, err)
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) && apiErrPtr != nil {
		return newAPIError(modelName, *apiErrPtr, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("gemini model %q: %w (%v)", modelName, ctxErr, err)
	}
	return fmt.Errorf("gemini model %q: %w", modelName, err)
}

func newAPIError(modelName string, e genai.APIError, wrapped error) *APIError {
	return &APIError{Model: modelName, Code: e.Code, Status: e.Status, Message: e.Message, Details: e.Details, err: wrapped}
}
