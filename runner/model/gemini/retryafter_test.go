package gemini

import (
	"testing"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestRetryAfterHeader: an HTTP Retry-After header on a 429 or a 503 is
// what the retry waits at least (providertest.RetryAfterHeader). Gemini's
// error body says nothing of it.
func TestRetryAfterHeader(t *testing.T) {
	pt.RetryAfterHeader(t, provider)
}
