package retry

import (
	"context"
	"iter"
	"testing"

	"github.com/agentrunner/agentrunner/runner/model"
)

// plainModel cannot cache; cacheable can, and says with which cache.
type plainModel string

func (p plainModel) Name() string { return string(p) }
func (p plainModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(func(*model.Response, error) bool) {}
}

type cacheable struct {
	plainModel
	cache *model.ContextCache
}

func (c cacheable) WithContextCache(cc model.ContextCache) model.Model {
	return cacheable{plainModel: c.plainModel, cache: &cc}
}

// TestWithContextCache: the targets that can cache get the cache, the
// others stay; without any, the model itself comes back.
func TestWithContextCache(t *testing.T) {
	m, err := New(Config{Primary: Target{Model: cacheable{plainModel: "gem"}}, Fallbacks: []Target{{Model: plainModel("other")}}})
	if err != nil {
		t.Fatal(err)
	}
	cc := model.ContextCache{Intervals: 2}
	got := m.WithContextCache(cc).(*Model)
	if c, ok := got.targets[0].Model.(cacheable); !ok || c.cache == nil || *c.cache != cc {
		t.Fatalf("primary %#v did not get the cache", got.targets[0].Model)
	}
	if got.targets[1].Model != plainModel("other") || m.targets[0].Model.(cacheable).cache != nil {
		t.Fatal("the fallback changed, or the original model did")
	}
	plain, err := New(Config{Primary: Target{Model: plainModel("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if plain.WithContextCache(cc) != model.Model(plain) {
		t.Fatal("a model that cannot cache did not return itself")
	}
}
