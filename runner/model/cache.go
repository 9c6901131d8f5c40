package model

import "time"

// ContextCache configures context caching (AppConfig.context_cache): a
// model keeps the stable front of its requests (system instruction,
// tools, the conversation but its newest content) in its provider's cache
// and sends only what follows.
type ContextCache struct {
	// Intervals is how many calls may reuse one cache before a new one
	// is made over the longer conversation.
	Intervals int
	// TTL is how long the provider keeps a cache.
	TTL time.Duration
	// MinTokens is the smallest front worth caching, in tokens estimated
	// at four characters each.
	MinTokens int
}

// Cacher is a model that can cache the front of its requests.
type Cacher interface {
	// WithContextCache returns the model calling with cache c; the
	// receiver is left as it is.
	WithContextCache(c ContextCache) Model
}
