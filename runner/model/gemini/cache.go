package gemini

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/agentrunner/agentrunner/runner/model"
)

// maxCaches bounds the caches one model keeps track of: the live
// conversations whose fronts it caches.
const maxCaches = 256

// contextCache is a model's set of Gemini cached contents, each holding
// the front of a request: its system instruction, tools and first n
// contents.
type contextCache struct {
	cfg model.ContextCache
	log *slog.Logger

	mu      sync.Mutex
	entries []*cacheEntry
}

// cacheEntry is one cached content.
type cacheEntry struct {
	name    string   // the cache's resource name, "cachedContents/..."
	front   [32]byte // digest of what it holds
	n       int      // contents it holds
	uses    int
	expires time.Time
}

// WithContextCache implements model.Cacher: the returned model caches the
// front of its requests in Gemini's cached contents.
func (m *Model) WithContextCache(c model.ContextCache) model.Model {
	cp := *m
	cp.cache = &contextCache{cfg: c, log: slog.Default()}
	return &cp
}

// front is the digest of a request's cacheable part: the model, the
// config's system instruction and tools, and contents.
func front(name string, cfg *genai.GenerateContentConfig, contents []*genai.Content) [32]byte {
	b, _ := json.Marshal(struct {
		Name     string
		System   *genai.Content
		Tools    []*genai.Tool
		Contents []*genai.Content
	}{name, cfg.SystemInstruction, cfg.Tools, contents})
	return sha256.Sum256(b)
}

// estimateTokens counts four characters a token, as Gemini's docs do.
func estimateTokens(cfg *genai.GenerateContentConfig, contents []*genai.Content) int {
	b, _ := json.Marshal(struct {
		System   *genai.Content
		Tools    []*genai.Tool
		Contents []*genai.Content
	}{cfg.SystemInstruction, cfg.Tools, contents})
	return len(b) / 4
}

// apply makes a request use a cache: a live one whose front the request
// starts with, else a new one over all its contents but the last, when
// that front is large enough. It returns the contents to send and the
// config to send them with; on any failure the request goes uncached.
func (c *contextCache) apply(ctx context.Context, client *genai.Client, name string, contents []*genai.Content, cfg *genai.GenerateContentConfig) ([]*genai.Content, *genai.GenerateContentConfig) {
	now := time.Now()
	if e := c.reuse(name, contents, cfg, now); e != nil {
		return contents[e.n:], cached(cfg, e.name)
	}
	n := len(contents) - 1
	if n < 1 || estimateTokens(cfg, contents[:n]) < c.cfg.MinTokens {
		return contents, cfg
	}
	cc, err := client.Caches.Create(ctx, name, &genai.CreateCachedContentConfig{
		TTL: c.cfg.TTL, Contents: contents[:n], SystemInstruction: cfg.SystemInstruction,
		Tools: cfg.Tools, ToolConfig: cfg.ToolConfig,
	})
	if err != nil {
		c.log.Warn("gemini context cache: create failed; the call goes uncached", "model", name, "err", err)
		return contents, cfg
	}
	c.add(&cacheEntry{name: cc.Name, front: front(name, cfg, contents[:n]), n: n, uses: 1, expires: now.Add(c.cfg.TTL)}, now)
	return contents[n:], cached(cfg, cc.Name)
}

// reuse returns a live entry the request starts with and counts the use,
// or nil. An entry used Intervals times is dropped: the next call makes a
// cache over the longer conversation.
func (c *contextCache) reuse(name string, contents []*genai.Content, cfg *genai.GenerateContentConfig, now time.Time) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.n >= len(contents) || !now.Before(e.expires) || e.uses >= c.cfg.Intervals {
			continue
		}
		if front(name, cfg, contents[:e.n]) != e.front {
			continue
		}
		e.uses++
		if e.uses >= c.cfg.Intervals {
			c.entries = append(c.entries[:i], c.entries[i+1:]...)
		}
		return e
	}
	return nil
}

// add keeps e, dropping expired entries and, past maxCaches, the oldest.
func (c *contextCache) add(e *cacheEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := c.entries[:0]
	for _, old := range c.entries {
		if now.Before(old.expires) {
			live = append(live, old)
		}
	}
	c.entries = append(live, e)
	if len(c.entries) > maxCaches {
		c.entries = c.entries[1:]
	}
}

// cached returns cfg for a call over cache name: the instruction and
// tools are in the cache, and Gemini refuses them twice.
func cached(cfg *genai.GenerateContentConfig, name string) *genai.GenerateContentConfig {
	cp := *cfg
	cp.SystemInstruction, cp.Tools, cp.ToolConfig = nil, nil, nil
	cp.CachedContent = name
	return &cp
}
