package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// cacheCall is one request the caching fake saw: a cache made, or a
// generateContent call and the cache it named.
type cacheCall struct {
	create   bool
	cache    string
	contents int
}

// fakeCachingGemini makes context caches and answers generateContent
// calls, recording each.
func fakeCachingGemini(t *testing.T) (*httptest.Server, func() []cacheCall) {
	var (
		mu    sync.Mutex
		calls []cacheCall
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Contents      []any  `json:"contents"`
			CachedContent string `json:"cachedContent"`
		}
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("fake: %v", err)
		}
		create := strings.HasSuffix(r.URL.Path, "/cachedContents")
		mu.Lock()
		calls = append(calls, cacheCall{create: create, cache: body.CachedContent, contents: len(body.Contents)})
		n := len(calls)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if create {
			fmt.Fprintf(w, `{"name":"cachedContents/c%d","expireTime":%q}`, n, time.Now().Add(10*time.Minute).UTC().Format(time.RFC3339))
			return
		}
		cached := 0
		if body.CachedContent != "" {
			cached = 800
		}
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"noted"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":900,"cachedContentTokenCount":%d,"candidatesTokenCount":1,"totalTokenCount":901}}`, cached)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []cacheCall {
		mu.Lock()
		defer mu.Unlock()
		return append([]cacheCall(nil), calls...)
	}
}

// TestContextCacheThroughServer: an app configured with context_cache
// makes a cache of the conversation so far on its second turn and reuses
// it on the third, sending only the new turns; the stored events count
// the cached tokens. An agent of the same kind of app on a provider
// without caching is named in the start log and serves as before.
func TestContextCacheThroughServer(t *testing.T) {
	fake, calls := fakeCachingGemini(t)
	t.Setenv("AGENTRUNNER_TEST_GEMINI_KEY", "fake-key")
	t.Setenv("AGENTRUNNER_TEST_OPENAI_KEY", "fake-key")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "apps.yaml")
	config := fmt.Sprintf(`models:
  - name: g
    provider: gemini
    model: gemini-fake
    base_url: %s
    api_key_env: AGENTRUNNER_TEST_GEMINI_KEY
  - name: gpt
    provider: openai
    model: gpt-fake
    base_url: %s
    api_key_env: AGENTRUNNER_TEST_OPENAI_KEY
apps:
  - name: notes
    context_cache: { cache_intervals: 5, ttl: 10m, min_tokens: 1 }
    root_agent: { name: scribe, llm: { model: g, instruction: "Take notes." } }
  - name: other
    context_cache: {}
    root_agent: { name: writer, llm: { model: gpt } }
`, fake.URL, fake.URL)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "a.db"), "--config", cfg)
	if l := logs.String(); !strings.Contains(l, "context caching is not supported") || !strings.Contains(l, "agent=writer") || strings.Contains(l, "agent=scribe") {
		t.Errorf("the start log does not name the one agent that cannot cache:\n%s", l)
	}
	conn := dial(t, addr)
	rc := servicev1.NewRunnerServiceClient(conn)
	sessions := servicev1.NewSessionServiceClient(conn)
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "notes", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"first", "second", "third"} {
		if n := countRun(t, rc, "notes", msg); n == 0 {
			t.Fatalf("turn %q answered nothing", msg)
		}
	}
	want := []cacheCall{
		{contents: 1},                             // one turn: nothing to cache
		{create: true, contents: 2},               // the first exchange is cached
		{cache: "cachedContents/c2", contents: 1}, // and only the new turn sent
		{cache: "cachedContents/c2", contents: 3}, // reused as the conversation grows
	}
	got := calls()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the fake saw %+v, want %+v", got, want)
	}
	sess, err := sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "notes", UserId: "u", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var cached []int32
	for _, ev := range sess.GetEvents() {
		if ev.GetAuthor() == "scribe" {
			cached = append(cached, ev.GetUsageMetadata().GetCachedContentTokenCount())
		}
	}
	if fmt.Sprint(cached) != "[0 800 800]" {
		t.Errorf("cached tokens per answer %v, want [0 800 800]", cached)
	}
	cancel()
	if err := <-exited; err != nil {
		t.Fatal(err)
	}
}
