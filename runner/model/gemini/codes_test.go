package gemini

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestErrorCodes checks that Gemini's failures carry the stable codes the
// retry package acts on, and the wait a 429 asks for.
func TestErrorCodes(t *testing.T) {
	tests := []struct {
		name      string
		reply     reply
		wantCode  string
		wantRetry bool
		wantAfter time.Duration
	}{
		{name: "429 with RetryInfo", reply: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`))
		}, wantCode: model.CodeResourceExhausted, wantRetry: true, wantAfter: 37 * time.Second},
		{name: "500", reply: apiError(500, "INTERNAL", "boom"), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "503", reply: apiError(503, "UNAVAILABLE", "overloaded"), wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "504", reply: apiError(504, "DEADLINE_EXCEEDED", "slow"), wantCode: model.CodeDeadlineExceeded, wantRetry: true},
		{name: "403", reply: apiError(403, "PERMISSION_DENIED", "no"), wantCode: model.CodePermissionDenied},
		{name: "400", reply: apiError(400, "INVALID_ARGUMENT", "bad"), wantCode: model.CodeInvalidArgument},
		{name: "404", reply: apiError(404, "NOT_FOUND", "no such model"), wantCode: model.CodeInvalidArgument},
		{name: "not JSON", reply: func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, wantCode: model.CodeUnavailable, wantRetry: true},
		{name: "null candidate", reply: unary(`{"candidates":[null]}`), wantCode: model.CodeUnavailable, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeGemini(t, tt.reply)
			_, err := pt.CollectErr(newModel(t, fake, "gemini-test").Generate(t.Context(), pt.HelloRequest(), false))
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T), want a *model.Error", err, err)
			}
			if me.Code != tt.wantCode || me.Retryable != tt.wantRetry || me.RetryAfter != tt.wantAfter {
				t.Errorf("code %s retryable %v after %v, want %s %v %v", me.Code, me.Retryable, me.RetryAfter, tt.wantCode, tt.wantRetry, tt.wantAfter)
			}
		})
	}
}
