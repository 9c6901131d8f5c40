package openai

import (
	"testing"

	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// TestRetryAfterHeader: a Retry-After header on a 429 or a 503 is what
// the retry waits at least (providertest.RetryAfterHeader).
func TestRetryAfterHeader(t *testing.T) {
	pt.RetryAfterHeader(t, provider)
}
