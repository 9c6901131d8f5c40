package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/agentrunner/agentrunner/runner/model"
)

// wrapError turns an error of the SDK into a *model.Error naming the model,
// or, when the caller's ctx ended, into an error with ctx.Err() in its
// chain, whatever the transport happened to report for the aborted read.
func wrapError(ctx context.Context, name string, httpResp *http.Response, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("anthropic model %q: %w", name, err)
		}
		return fmt.Errorf("anthropic model %q: %w (%v)", name, ctxErr, err)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return classifyAPIError(name, apiErr)
	}
	if httpResp != nil && httpResp.StatusCode >= 400 {
		e := fmt.Errorf("anthropic model %q: HTTP %d: %w", name, httpResp.StatusCode, err)
		return model.HTTPError(httpResp.StatusCode, httpResp.Header, time.Now(), e)
	}
	e := model.Classify(fmt.Errorf("anthropic model %q: %w", name, err))
	if e.Code == model.CodeUnavailable {
		// Anything else between the SDK and the server (a dropped
		// connection, a body that does not decode) is a fault of that
		// attempt, not of the request.
		e.Retryable = true
	}
	return e
}

// classifyAPIError classifies an API error: by its HTTP status, or, for an error
// event inside a stream (whose status is the stream's 200), by its type.
func classifyAPIError(name string, apiErr *anthropic.Error) error {
	var body struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(apiErr.RawJSON()), &body)
	typ := body.Error.Type
	if typ == "" {
		typ = string(apiErr.Type())
	}
	msg := body.Error.Message
	if msg == "" {
		msg = http.StatusText(apiErr.StatusCode)
	}
	if apiErr.StatusCode >= 400 {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		text := fmt.Sprintf("anthropic model %q: HTTP %d %s: %s", name, apiErr.StatusCode, typ, msg)
		return model.HTTPError(apiErr.StatusCode, h, time.Now(), wrapped{msg: text, err: apiErr})
	}
	me := &model.Error{Err: wrapped{msg: fmt.Sprintf("anthropic model %q: error in stream: %s: %s", name, typ, msg), err: apiErr}}
	switch typ {
	case "rate_limit_error":
		me.Code, me.Retryable = model.CodeResourceExhausted, true
	case "invalid_request_error", "not_found_error", "request_too_large":
		me.Code = model.CodeInvalidArgument
	case "authentication_error", "permission_error", "billing_error":
		me.Code = model.CodePermissionDenied
	case "timeout_error":
		me.Code, me.Retryable = model.CodeDeadlineExceeded, true
	default:
		// overloaded_error, api_error and whatever else the server broke
		// off with.
		me.Code, me.Retryable = model.CodeUnavailable, true
	}
	return me
}

// wrapped gives the SDK's error a message of ours: its own prints the
// request URL and the raw body, which is noise in an event.
type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }
