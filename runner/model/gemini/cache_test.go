package gemini

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	pt "github.com/agentrunner/agentrunner/runner/model/internal/providertest"
)

// cachingFake is a Gemini API that makes context caches and answers
// calls, with switches for a refused cache and a cache gone on the
// server.
type cachingFake struct {
	*pt.Fake
	mu          sync.Mutex
	created     int
	refuse      bool
	gone        bool
	expireAfter time.Duration
	now         func() time.Time
}

func newCachingFake(t *testing.T) *cachingFake {
	f := &cachingFake{expireAfter: time.Hour}
	f.Fake = newFakeGemini(t, f.reply)
	return f
}

func (f *cachingFake) reply(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/cachedContents") && f.refuse:
		apiError(http.StatusBadRequest, "INVALID_ARGUMENT", "Cached content is too small")(w, r)
	case strings.HasSuffix(r.URL.Path, "/cachedContents"):
		f.created++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"cachedContents/c%d","model":"models/gemini-test","expireTime":%q}`,
			f.created, f.now().Add(f.expireAfter).UTC().Format(time.RFC3339))
	case f.gone && f.lastBody()["cachedContent"] != nil:
		apiError(http.StatusNotFound, "NOT_FOUND", "CachedContent not found")(w, r)
	default:
		unary(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":900,"cachedContentTokenCount":800,"candidatesTokenCount":1,"totalTokenCount":901}}`)(w, r)
	}
}

func (f *cachingFake) lastBody() map[string]any {
	seen := f.Seen()
	return seen[len(seen)-1].Body
}

// since returns the requests seen from index i on.
func (f *cachingFake) since(i int) []pt.Request { return f.Seen()[i:] }

// turns is a conversation of n contents, alternating user and model,
// ending with the user.
func turns(n int) []*agentrunnerv1.Content {
	out := make([]*agentrunnerv1.Content, n)
	for i := range out {
		role := "user"
		if i%2 == 1 {
			role = "model"
		}
		out[i] = &agentrunnerv1.Content{Role: role, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("turn %d %s", i, strings.Repeat("x", 200))}}}}
	}
	return out
}

// step is one call of the cache test and what the fake should see.
type cacheStep struct {
	name        string
	instruction string
	contents    int
	minTokens   int
	advance     time.Duration
	refuse      bool
	gone        bool
	// wantCreate is the number of contents a cache made for this call
	// covers, 0 for none; wantCache the cache the answering call uses,
	// "" for a whole request; wantSent the contents it sends.
	wantCreate int
	wantCache  string
	wantSent   int
	// wantCalls counts the generateContent calls (a gone cache makes a
	// second, whole one).
	wantCalls int
}

// TestContextCache drives one model through the life of its caches: made
// for all but the newest turn, reused while the conversation grows,
// replaced after cache_intervals calls or when it expires or the
// instruction changes, skipped below min_tokens, and never in the way: a
// refused cache or a cache gone on the server leaves the call whole.
func TestContextCache(t *testing.T) {
	fake := newCachingFake(t)
	var logs bytes.Buffer
	m, err := New(t.Context(), "gemini-test", WithClientConfig(genai.ClientConfig{
		APIKey: "fake-key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: fake.URL},
	}), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	var clock sync.Mutex
	now := time.Now()
	m.caches.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	fake.now = m.caches.now
	terse := "You are terse. " + strings.Repeat("Rules. ", 100)
	steps := []cacheStep{
		{name: "first call makes a cache", contents: 3, wantCreate: 2, wantCache: "cachedContents/c1", wantSent: 1, wantCalls: 1},
		{name: "a longer conversation reuses it", contents: 5, wantCache: "cachedContents/c1", wantSent: 3, wantCalls: 1},
		{name: "after cache_intervals uses a new one", contents: 7, wantCreate: 6, wantCache: "cachedContents/c2", wantSent: 1, wantCalls: 1},
		{name: "another instruction is another prefix", instruction: "Be verbose. " + strings.Repeat("Rules. ", 100), contents: 7, wantCreate: 6, wantCache: "cachedContents/c3", wantSent: 1, wantCalls: 1},
		{name: "an expired cache is not used", contents: 9, advance: 2 * time.Hour, wantCreate: 8, wantCache: "cachedContents/c4", wantSent: 1, wantCalls: 1},
		{name: "below min_tokens the request goes whole", instruction: "Tiny.", contents: 3, minTokens: 1 << 20, wantSent: 3, wantCalls: 1},
		{name: "a cache gone on the server: the call goes whole", contents: 11, gone: true, wantSent: 11, wantCalls: 2},
		{name: "a refused cache: the call goes whole", contents: 13, refuse: true, wantSent: 13, wantCalls: 1},
		{name: "after a refusal no cache is tried for a while", contents: 15, wantSent: 15, wantCalls: 1},
	}
	for _, st := range steps {
		clock.Lock()
		now = now.Add(st.advance)
		clock.Unlock()
		fake.mu.Lock()
		fake.refuse, fake.gone = st.refuse, st.gone
		fake.mu.Unlock()
		instr := terse
		if st.instruction != "" {
			instr = st.instruction
		}
		minTokens := st.minTokens
		if minTokens == 0 {
			minTokens = 10
		}
		before := len(fake.Seen())
		req := &model.Request{SystemInstruction: instr, Contents: turns(st.contents),
			Tools: []*model.FunctionDeclaration{{Name: "lookup", Description: "looks up"}},
			Cache: &model.CacheConfig{Intervals: 2, TTL: time.Hour, MinTokens: minTokens}}
		var answers []*model.Response
		for r, err := range m.Generate(t.Context(), req, false) {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			answers = append(answers, r)
		}
		if len(answers) != 1 || answers[0].Content.GetParts()[0].GetText() != "ok" {
			t.Fatalf("%s: answers %v", st.name, answers)
		}
		checkCacheStep(t, st, fake.since(before), instr)
	}
	if !strings.Contains(logs.String(), "did not create a cache") || !strings.Contains(logs.String(), "a call through the cache failed") {
		t.Errorf("the refusal and the gone cache are not logged:\n%s", logs.String())
	}
}

func checkCacheStep(t *testing.T, st cacheStep, reqs []pt.Request, instr string) {
	t.Helper()
	var creates, calls []pt.Request
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/cachedContents") {
			creates = append(creates, r)
		} else {
			calls = append(calls, r)
		}
	}
	switch {
	case st.wantCreate == 0 && len(creates) > 0 && !st.refuse:
		t.Fatalf("%s: %d caches made, want none", st.name, len(creates))
	case st.wantCreate > 0 && len(creates) != 1:
		t.Fatalf("%s: %d caches made, want 1", st.name, len(creates))
	case st.wantCreate > 0:
		body := creates[0].Body
		if n := len(get(body, "contents").([]any)); n != st.wantCreate || body["ttl"] != "3600s" || get(body, "tools") == nil ||
			!strings.Contains(fmt.Sprint(get(body, "systemInstruction")), instr[:10]) {
			t.Errorf("%s: cache made of %d contents (want %d), ttl %v, tools %v", st.name, n, st.wantCreate, body["ttl"], get(body, "tools"))
		}
	}
	if len(calls) != st.wantCalls {
		t.Fatalf("%s: %d calls, want %d", st.name, len(calls), st.wantCalls)
	}
	last := calls[len(calls)-1].Body
	cache, _ := last["cachedContent"].(string)
	sent := len(get(last, "contents").([]any))
	if cache != st.wantCache || sent != st.wantSent {
		t.Errorf("%s: call used cache %q sending %d contents, want %q and %d", st.name, cache, sent, st.wantCache, st.wantSent)
	}
	// Through a cache, the instruction and tools are in the cache and
	// must not be sent again; whole, they must be.
	if (last["systemInstruction"] == nil) != (cache != "") || (last["tools"] == nil) != (cache != "") {
		t.Errorf("%s: cache %q, yet systemInstruction %v and tools %v", st.name, cache, last["systemInstruction"] != nil, last["tools"] != nil)
	}
}

func get(m map[string]any, k string) any { return m[k] }
