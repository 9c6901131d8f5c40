package gemini

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agentrunner/agentrunner/runner/model"
)

// Context caching defaults, as model.CacheConfig documents them.
const (
	defaultCacheIntervals = 10
	defaultCacheTTL       = 30 * time.Minute
	defaultCacheMinTokens = 1024
	// cacheMargin: a cache this close to its expiry is not used, so that
	// it cannot expire between the choice and the call.
	cacheMargin = 30 * time.Second
	// maxCacheEntries bounds the caches a model remembers; the oldest go
	// first. Each session's conversation has its own prefix, so a busy
	// server has many.
	maxCacheEntries = 256
	// bytesPerToken estimates tokens from the JSON size of what would be
	// cached; it errs towards fewer tokens, so that a request near the
	// minimum is sent whole rather than refused by the API.
	bytesPerToken = 4
)

// contextCache remembers the context caches a model made, by the hash of
// the request prefix each covers: model name, instruction, tools and the
// first n contents.
type contextCache struct {
	mu      sync.Mutex
	entries []*cacheEntry // oldest first
	// cooldown counts calls that will not try to create a cache after the
	// API refused one (a prefix below the model's minimum, say), so that a
	// refusal is not repeated on every call.
	cooldown int
	now      func() time.Time
}

type cacheEntry struct {
	name    string
	key     [sha256.Size]byte
	n       int // contents covered
	expires time.Time
	uses    int
}

func newContextCache() *contextCache {
	return &contextCache{now: time.Now}
}

// prefixes returns the hash of each prefix of contents, index i covering
// the first i contents, and the JSON size of all of them with the
// instruction and tools: one pass, however many caches are compared.
func prefixes(name string, cfg *genai.GenerateContentConfig, contents []*genai.Content) ([][sha256.Size]byte, int, error) {
	h := sha256.New()
	size := 0
	write := func(v any) error {
		b, err := json.Marshal(v)
		size += len(b)
		h.Write(b)
		h.Write([]byte{0})
		return err
	}
	if err := errors.Join(write(name), write(cfg.SystemInstruction), write(cfg.Tools), write(cfg.ToolConfig)); err != nil {
		return nil, 0, err
	}
	out := make([][sha256.Size]byte, 0, len(contents)+1)
	out = append(out, sum(h))
	for _, c := range contents {
		if err := write(c); err != nil {
			return nil, 0, err
		}
		out = append(out, sum(h))
	}
	return out, size, nil
}

// sum is the hash so far, h left as it is to go on.
func sum(h hash.Hash) [sha256.Size]byte {
	var k [sha256.Size]byte
	copy(k[:], h.Sum(nil))
	return k
}

// find returns the live cache covering the longest prefix of the request
// (keys[i] is the hash of the first i contents), counting the use, or
// nil. Expired and used-up caches are forgotten.
func (c *contextCache) find(keys [][sha256.Size]byte, intervals int) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var best *cacheEntry
	live := c.entries[:0]
	for _, e := range c.entries {
		if now.Add(cacheMargin).After(e.expires) || e.uses >= intervals {
			continue
		}
		live = append(live, e)
		if e.n < len(keys) && keys[e.n] == e.key && (best == nil || e.n > best.n) {
			best = e
		}
	}
	clear(c.entries[len(live):])
	c.entries = live
	if best != nil {
		best.uses++
	}
	return best
}

// mayCreate reports whether a cache may be created now, counting down a
// cooldown.
func (c *contextCache) mayCreate() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cooldown > 0 {
		c.cooldown--
		return false
	}
	return true
}

func (c *contextCache) refused(calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cooldown = calls
}

func (c *contextCache) add(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCacheEntries {
		c.entries = append(c.entries[:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, e)
}

func (c *contextCache) forget(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.entries {
		if x == e {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
			return
		}
	}
}

// cacheSettings fills in the defaults of cc.
func cacheSettings(cc *model.CacheConfig) (intervals int, ttl time.Duration, minTokens int) {
	intervals, ttl, minTokens = cc.Intervals, cc.TTL, cc.MinTokens
	if intervals <= 0 {
		intervals = defaultCacheIntervals
	}
	if ttl <= 0 {
		ttl = defaultCacheTTL
	}
	if minTokens <= 0 {
		minTokens = defaultCacheMinTokens
	}
	return intervals, ttl, minTokens
}

// withCache returns the request to send: through a cache covering all
// but the newest content, reused or made now, or whole (e nil) when the
// request is too small, the API refused a cache, or nothing is cached
// yet and one cannot be made. A call that uses a cache sends no
// instruction or tools: the cache holds them.
func (m *Model) withCache(ctx context.Context, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, cc *model.CacheConfig) ([]*genai.Content, *genai.GenerateContentConfig, *cacheEntry) {
	n := len(contents) - 1
	if n < 1 {
		return contents, cfg, nil
	}
	intervals, ttl, minTokens := cacheSettings(cc)
	keys, size, err := prefixes(name, cfg, contents[:n])
	if err != nil {
		m.log.WarnContext(ctx, "context cache: request not hashable; sent whole", "model", name, "err", err)
		return contents, cfg, nil
	}
	if e := m.caches.find(keys, intervals); e != nil {
		return contents[e.n:], cachedConfig(cfg, e.name), e
	}
	if size/bytesPerToken < minTokens || !m.caches.mayCreate() {
		return contents, cfg, nil
	}
	created, err := m.client.Caches.Create(ctx, name, &genai.CreateCachedContentConfig{
		TTL: ttl, Contents: contents[:n], SystemInstruction: cfg.SystemInstruction, Tools: cfg.Tools, ToolConfig: cfg.ToolConfig,
	})
	if err != nil || created == nil || created.Name == "" {
		m.caches.refused(intervals)
		m.log.WarnContext(ctx, "context cache: the API did not create a cache; requests are sent whole for a while",
			"model", name, "calls", intervals, "err", err)
		return contents, cfg, nil
	}
	expires := m.caches.now().Add(ttl)
	if !created.ExpireTime.IsZero() {
		expires = created.ExpireTime
	}
	e := &cacheEntry{name: created.Name, key: keys[n], n: n, expires: expires, uses: 1}
	m.caches.add(e)
	m.log.DebugContext(ctx, "context cache created", "model", name, "cache", e.name, "contents", n, "expires", expires)
	return contents[n:], cachedConfig(cfg, e.name), e
}

// cachedConfig is cfg for a call through the cache name.
func cachedConfig(cfg *genai.GenerateContentConfig, name string) *genai.GenerateContentConfig {
	c := *cfg
	c.CachedContent = name
	c.SystemInstruction, c.Tools, c.ToolConfig = nil, nil, nil
	return &c
}

// cacheGone reports whether a call through a cache failed in a way that
// a cache that no longer exists (deleted, expired early) explains: the
// API answers 404 or 403 for it. The request is then sent whole.
func cacheGone(err error) bool {
	var me *model.Error
	return errors.As(err, &me) && (me.Code == model.CodeInvalidArgument || me.Code == model.CodePermissionDenied)
}

// discardLogger is the logger of a model made without WithLogger.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
