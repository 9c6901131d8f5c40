package telemetry

import (
	"slices"
	"testing"
)

// TestRunIndex: values are found by key; a run's drop returns its
// leftovers but its own and leaves other runs alone.
func TestRunIndex(t *testing.T) {
	x := newRunIndex[int]()
	x.put("r1", 1)
	x.put("r1\x00b\x00agent", 2)
	x.put("r1\x00b\x00model", 3)
	x.put("r10\x00b\x00agent", 4) // a run whose id starts with another's
	x.put("r2", 5)
	if v, ok := x.get("r1\x00b\x00model"); !ok || v != 3 {
		t.Fatalf("get = %d, %v", v, ok)
	}
	if v, ok := x.take("r1\x00b\x00agent"); !ok || v != 2 {
		t.Fatalf("take = %d, %v", v, ok)
	}
	if _, ok := x.take("r1\x00b\x00agent"); ok {
		t.Fatal("taken twice")
	}
	if got := x.drop("r1"); !slices.Equal(got, []int{3}) {
		t.Fatalf("drop(r1) = %v, want the model span only", got)
	}
	if _, ok := x.get("r1"); ok {
		t.Fatal("drop left the run's own value")
	}
	for key, want := range map[string]int{"r10\x00b\x00agent": 4, "r2": 5} {
		if v, ok := x.get(key); !ok || v != want {
			t.Fatalf("%q after another run's drop = %d, %v", key, v, ok)
		}
	}
	x.take("r2")
	x.drop("r10")
	if len(x.runs) != 0 {
		t.Fatalf("runs left: %v", x.runs)
	}
}
