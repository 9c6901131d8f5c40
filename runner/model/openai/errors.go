package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentrunner/agentrunner/runner/model"
)

// wrapError turns an error of the SDK into a *model.Error naming the model,
// or, when the caller's ctx ended, into an error with ctx.Err() in its
// chain, whatever the transport happened to report for the aborted read.
//
// httpResp is the HTTP response when there was one: the SDK reports an
// error status whose body is not its JSON error shape (a proxy's HTML 502)
// as a decoding error, and the status is then only known from there.
func wrapError(ctx context.Context, name string, httpResp *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("openai model %q: %w", name, err)
		}
		return fmt.Errorf("openai model %q: %w (%v)", name, ctxErr, err)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if apiErr.Code != "" {
			msg = apiErr.Code + ": " + msg
		}
		e := fmt.Errorf("openai model %q: HTTP %d: %s: %w", name, apiErr.StatusCode, msg, err)
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return model.HTTPError(apiErr.StatusCode, h, time.Now(), e)
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return streamError(name, streamErr)
	}
	if httpResp != nil && httpResp.StatusCode >= 400 {
		e := fmt.Errorf("openai model %q: HTTP %d: %w", name, httpResp.StatusCode, err)
		return model.HTTPError(httpResp.StatusCode, httpResp.Header, time.Now(), e)
	}
	e := model.Classify(fmt.Errorf("openai model %q: %w", name, err))
	if e.Code == model.CodeUnavailable {
		// Anything else between the SDK and the server (a dropped
		// connection, a body that does not decode) is a fault of that
		// attempt, not of the request.
		e.Retryable = true
	}
	return e
}

// streamError classifies an error event inside a stream, which carries the
// API's error object but no HTTP status.
func streamError(name string, se *ssestream.StreamError) error {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &body)
	kind := body.Error.Type
	if c, ok := body.Error.Code.(string); ok && c != "" {
		kind = c
	}
	e := &model.Error{Err: fmt.Errorf("openai model %q: error in stream: %s: %s", name, kind, body.Error.Message)}
	switch {
	case strings.Contains(kind, "rate_limit"), strings.Contains(kind, "quota"):
		e.Code, e.Retryable = model.CodeResourceExhausted, true
	case strings.Contains(kind, "invalid_request"), strings.Contains(kind, "not_found"):
		e.Code = model.CodeInvalidArgument
	case strings.Contains(kind, "authentication"), strings.Contains(kind, "permission"), strings.Contains(kind, "api_key"):
		e.Code = model.CodePermissionDenied
	case strings.Contains(kind, "timeout"):
		e.Code, e.Retryable = model.CodeDeadlineExceeded, true
	default:
		// server_error and whatever else the server broke off with.
		e.Code, e.Retryable = model.CodeUnavailable, true
	}
	return e
}
