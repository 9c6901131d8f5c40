package providers

import (
	"context"
	"iter"
	"strings"

	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/gemini"
)

// redactedKey stands in for an API key in what a model reports.
const redactedKey = "[redacted API key]"

// keyless wraps a provider's model so that its API key never leaves in
// what the model reports: a provider or a proxy in front of it may echo
// the key it was sent in an error body ("Incorrect API key provided:
// sk-…"), which becomes the run's error, its event's error_message, a
// log line of every retry and the answer a client reads. Errors keep
// what they wrap (errors.Is and errors.As still see the provider's
// error types, on which retries decide); only their text changes.
type keyless struct {
	model.Model
	key string
}

// cachingKeyless is keyless for a model that uses context caching, so
// that the wrapper does not hide it (model.ContextCacher).
type cachingKeyless struct {
	keyless
	model.ContextCacher
}

// keyCut is withoutKey for a provider's constructor: nothing to wrap
// when it failed (a nil *M would make a non-nil model.Model).
func keyCut[M model.Model](m M, err error, key string) (model.Model, error) {
	if err != nil {
		return nil, err
	}
	return withoutKey(m, key), nil
}

// withoutKey wraps m when it was given a key; a key too short to be a
// secret (tests' "k") would only mangle unrelated text.
func withoutKey(m model.Model, key string) model.Model {
	if len(key) < 8 {
		return m
	}
	k := keyless{Model: m, key: key}
	if c, ok := m.(model.ContextCacher); ok {
		return cachingKeyless{keyless: k, ContextCacher: c}
	}
	return k
}

// Generate passes the model's responses on, with the key cut out of
// their error messages and of its errors.
func (m keyless) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for r, err := range m.Model.Generate(ctx, req, stream) {
			if r != nil && strings.Contains(r.ErrorMessage, m.key) {
				r.ErrorMessage = strings.ReplaceAll(r.ErrorMessage, m.key, redactedKey)
			}
			if err != nil && strings.Contains(err.Error(), m.key) {
				err = cutKey(err, m.key)
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// cutKey returns err with the key cut out of its text. A provider's
// *model.Error is copied with its cause wrapped: the retry policy reads
// that type with errors.As and prints it, so the wrapping must be inside
// it, not around it.
func cutKey(err error, key string) error {
	if me, ok := err.(*model.Error); ok {
		cp := *me
		cp.Err = &keylessError{err: me.Err, key: key}
		return &cp
	}
	return &keylessError{err: err, key: key}
}

// keylessError is an error whose text had the key in it.
type keylessError struct {
	err error
	key string
}

func (e *keylessError) Error() string { return strings.ReplaceAll(e.err.Error(), e.key, redactedKey) }

// Unwrap keeps the provider's error for errors.Is and errors.As. Whoever
// prints an unwrapped error prints the key: nothing in the runner does.
func (e *keylessError) Unwrap() error { return e.err }

// geminiEnvKeyCut is keyCut for a Gemini model that takes its key from
// genai's environment, where either variable may hold one.
func (f *Factory) geminiEnvKeyCut(m *gemini.Model, err error) (model.Model, error) {
	if err != nil {
		return nil, err
	}
	var out model.Model = m
	for _, v := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"} {
		out = withoutKey(out, f.opts.Getenv(v))
	}
	return out, nil
}
