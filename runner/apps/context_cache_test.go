package apps

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentrunner/agentrunner/runner/model"
)

// cacherModel records the context caches it is asked for.
type cacherModel struct {
	namedModel
	got *[]model.ContextCache
}

func (m cacherModel) WithContextCache(c model.ContextCache) model.Model {
	*m.got = append(*m.got, c)
	return cachingModel{m}
}

// cachingModel is a cacherModel with its cache.
type cachingModel struct{ model.Model }

// TestBuildContextCache: an app's context_cache reaches the models that
// can cache, with its defaults filled in, once per model; a model that
// cannot says so in one log line; an app without it caches nothing.
func TestBuildContextCache(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(`
apps:
  - name: cached
    context_cache: { cache_intervals: 3, ttl_seconds: 60 }
    root_agent:
      name: a
      sequential: {}
      sub_agents:
          - { name: b, llm: { model: gem } }
          - { name: c, llm: { model: gem } }
          - { name: d, llm: { model: plain } }
  - name: uncached
    root_agent: { name: e, llm: { model: gem } }
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []model.ContextCache
	factory := func(_ context.Context, name string) (model.Model, error) {
		if name == "gem" {
			return cacherModel{namedModel: "gem", got: &got}, nil
		}
		return namedModel(name), nil
	}
	var logs bytes.Buffer
	if _, err := (Builder{Models: factory, Logger: slog.New(slog.NewTextHandler(&logs, nil))}).Build(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	want := model.ContextCache{Intervals: 3, TTL: time.Minute, MinTokens: 4096}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("context caches asked for: %+v, want one %+v", got, want)
	}
	if n := strings.Count(logs.String(), "cannot cache"); n != 1 || !strings.Contains(logs.String(), "model=plain") {
		t.Fatalf("logs:\n%s\nwant one line about model plain", logs.String())
	}
}
