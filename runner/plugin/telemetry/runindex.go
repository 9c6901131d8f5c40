package telemetry

import (
	"strings"
	"sync"
)

// runIndex holds values (open spans, start times) by their key, grouped
// by the run the key belongs to, so that the end of a run drops its
// leftovers without a look at every other run's: a key is a run id, or
// a run id, a NUL and more (spanKey).
type runIndex[V any] struct {
	mu   sync.Mutex
	runs map[string]map[string]V
}

func newRunIndex[V any]() *runIndex[V] { return &runIndex[V]{runs: map[string]map[string]V{}} }

// runOf is the run a key belongs to.
func runOf(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[:i]
	}
	return key
}

func (x *runIndex[V]) put(key string, v V) {
	run := runOf(key)
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.runs[run]
	if m == nil {
		m = map[string]V{}
		x.runs[run] = m
	}
	m[key] = v
}

// get returns the value of key.
func (x *runIndex[V]) get(key string) (V, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	v, ok := x.runs[runOf(key)][key]
	return v, ok
}

// take removes and returns the value of key.
func (x *runIndex[V]) take(key string) (V, bool) {
	run := runOf(key)
	x.mu.Lock()
	defer x.mu.Unlock()
	m := x.runs[run]
	v, ok := m[key]
	if ok {
		delete(m, key)
		if len(m) == 0 {
			delete(x.runs, run)
		}
	}
	return v, ok
}

// drop removes every value of run and returns those under keys other
// than the run id itself.
func (x *runIndex[V]) drop(run string) []V {
	x.mu.Lock()
	m := x.runs[run]
	delete(x.runs, run)
	x.mu.Unlock()
	var out []V
	for k, v := range m {
		if k != run {
			out = append(out, v)
		}
	}
	return out
}
