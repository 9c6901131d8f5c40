package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestHTTPError(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status    int
		header    http.Header
		wantCode  string
		wantRetry bool
		wantAfter time.Duration
	}{
		{429, http.Header{"Retry-After": {"12"}}, CodeResourceExhausted, true, 12 * time.Second},
		{429, http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, CodeResourceExhausted, true, 90 * time.Second},
		{429, http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, CodeResourceExhausted, true, 250 * time.Millisecond},
		{429, http.Header{"Retry-After": {"soon"}}, CodeResourceExhausted, true, 0},
		{429, http.Header{"Retry-After": {"99999999"}}, CodeResourceExhausted, true, 24 * time.Hour},
		{503, http.Header{"Retry-After": {"2"}}, CodeUnavailable, true, 2 * time.Second},
		{500, nil, CodeUnavailable, true, 0},
		{529, nil, CodeUnavailable, true, 0},
		{504, nil, CodeDeadlineExceeded, true, 0},
		{408, nil, CodeDeadlineExceeded, true, 0},
		{401, nil, CodePermissionDenied, false, 0},
		{403, nil, CodePermissionDenied, false, 0},
		{400, nil, CodeInvalidArgument, false, 0},
		{404, nil, CodeInvalidArgument, false, 0},
		{413, nil, CodeInvalidArgument, false, 0},
	}
	for _, tt := range tests {
		e := HTTPError(tt.status, tt.header, now, errors.New("x"))
		if e.Code != tt.wantCode || e.Retryable != tt.wantRetry || e.RetryAfter != tt.wantAfter {
			t.Errorf("HTTPError(%d, %v) = %s %v %v, want %s %v %v", tt.status, tt.header, e.Code, e.Retryable, e.RetryAfter, tt.wantCode, tt.wantRetry, tt.wantAfter)
		}
	}
}

func TestClassify(t *testing.T) {
	var syntaxErr error
	if err := json.Unmarshal([]byte("{"), new(any)); err != nil {
		syntaxErr = err
	}
	provider := &Error{Code: CodePermissionDenied, Err: errors.New("bad key")}
	tests := []struct {
		name      string
		err       error
		wantCode  string
		wantRetry bool
	}{
		{"provider's", fmt.Errorf("wrapped: %w", provider), CodePermissionDenied, false},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), CodeUnavailable, true},
		{"deadline", context.DeadlineExceeded, CodeDeadlineExceeded, true},
		{"bad JSON", syntaxErr, CodeUnavailable, true},
		{"anything else", errors.New("odd"), CodeUnavailable, false},
	}
	for _, tt := range tests {
		e := Classify(tt.err)
		if e.Code != tt.wantCode || e.Retryable != tt.wantRetry {
			t.Errorf("%s: Classify = %s %v, want %s %v", tt.name, e.Code, e.Retryable, tt.wantCode, tt.wantRetry)
		}
		if !errors.Is(e, tt.err) && !errors.Is(tt.err, e) {
			t.Errorf("%s: the classified error lost the original", tt.name)
		}
	}
	if Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}
