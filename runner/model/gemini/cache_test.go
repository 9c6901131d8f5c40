package gemini

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// cachingFake answers cachedContents creations with a name and
// generateContent calls with "ok".
func cachingFake(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if strings.HasSuffix(r.URL.Path, "/cachedContents") {
		io.WriteString(w, `{"name":"cachedContents/c1","model":"models/gemini-x"}`)
		return
	}
	io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)
}

func turns(texts ...string) []*agentrunnerv1.Content {
	var out []*agentrunnerv1.Content
	for i, t := range texts {
		role := "user"
		if i%2 == 1 {
			role = "model"
		}
		out = append(out, &agentrunnerv1.Content{Role: role, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: t}}}})
	}
	return out
}

// TestContextCache: the first call over a long enough front creates a
// cached content holding the instruction, tools and all contents but the
// last, and sends only the last; the next call that starts with the same
// front reuses it; after Intervals uses, a new one is made; a short front
// is never cached.
func TestContextCache(t *testing.T) {
	f := newFakeGemini(t, cachingFake)
	m := f.model(t, "gemini-x").WithContextCache(model.ContextCache{Intervals: 2, TTL: time.Hour, MinTokens: 50})
	long := strings.Repeat("background ", 40)
	req := &model.Request{
		SystemInstruction: "Be brief.",
		Tools:             []*model.FunctionDeclaration{{Name: "lookup", Description: "Looks up."}},
		Contents:          turns(long, "noted", "first question"),
	}
	call := func(req *model.Request) {
		t.Helper()
		for _, err := range m.Generate(t.Context(), req, false) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	call(req)
	req.Contents = append(req.Contents, turns("", "answer one", "second question")[1:]...)
	call(req) // reuses: it starts with the cached front
	req.Contents = append(req.Contents, turns("", "answer two", "third question")[1:]...)
	call(req) // the cache served 2 calls: a new one

	f.mu.Lock()
	reqs := append([]fakeRequest(nil), f.requests...)
	f.mu.Unlock()
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.Path[strings.LastIndex(r.Path, "/")+1:])
	}
	if got, want := strings.Join(paths, " "), "cachedContents gemini-x:generateContent gemini-x:generateContent cachedContents gemini-x:generateContent"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	create := reqs[0].Body
	if n := len(create["contents"].([]any)); n != 2 || create["systemInstruction"] == nil || create["tools"] == nil || create["ttl"] != "3600s" {
		t.Fatalf("cache created with %d contents, instruction %v, tools %v, ttl %v", n, create["systemInstruction"], create["tools"], create["ttl"])
	}
	for i, want := range []int{1, 3} { // the first call sends the last content, the second the three after the front
		gen := reqs[1+i].Body
		if gen["cachedContent"] != "cachedContents/c1" || gen["systemInstruction"] != nil || gen["tools"] != nil {
			t.Fatalf("call %d: cachedContent %v, instruction %v, tools %v", i+1, gen["cachedContent"], gen["systemInstruction"], gen["tools"])
		}
		if n := len(gen["contents"].([]any)); n != want {
			t.Fatalf("call %d sent %d contents, want %d", i+1, n, want)
		}
	}
	if n := len(reqs[3].Body["contents"].([]any)); n != 6 {
		t.Fatalf("the new cache holds %d contents, want 6", n)
	}

	short := f.model(t, "gemini-x").WithContextCache(model.ContextCache{Intervals: 2, TTL: time.Hour, MinTokens: 50})
	before := len(reqs)
	for _, err := range short.Generate(t.Context(), &model.Request{Contents: turns("hi", "hello", "bye")}, false) {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if last := f.requests[len(f.requests)-1]; len(f.requests) != before+1 || last.Body["cachedContent"] != nil {
		t.Fatalf("a short front was cached: %d requests, last %v", len(f.requests)-before, last.Body)
	}
}
