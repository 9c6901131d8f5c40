package remotea2a

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func texts(s *stream) string {
	var out []string
	for _, p := range s.parts {
		out = append(out, p.GetText())
	}
	return strings.Join(out, ",")
}

// TestArtifactReplacement: an artifact replaced after another one started
// drops what followed it, and a later replacement of that other one
// starts where the answer now ends instead of bringing back dropped
// parts.
func TestArtifactReplacement(t *testing.T) {
	s := &stream{artifacts: map[a2a.ArtifactID]int{}}
	update := func(id, text string, appendTo bool) {
		t.Helper()
		err := s.handle(&a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Append: appendTo,
			Artifact: &a2a.Artifact{ID: a2a.ArtifactID(id), Parts: a2a.ContentParts{a2a.NewTextPart(text)}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	update("A", "a1", false)
	update("A", "a1b", true)
	update("B", "b1", false)
	update("A", "a2", false)
	update("B", "b2", false)
	if got := texts(s); got != "a2,b2" {
		t.Fatalf("answer %q, want %q", got, "a2,b2")
	}
}

// TestNullArtifact: a task whose artifacts hold a null (as a remote's JSON
// may) is read without it.
func TestNullArtifact(t *testing.T) {
	s := &stream{artifacts: map[a2a.ArtifactID]int{}}
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
		Artifacts: []*a2a.Artifact{nil, {ID: "A", Parts: a2a.ContentParts{a2a.NewTextPart("x")}}}}
	if err := s.handle(task); err != nil {
		t.Fatal(err)
	}
	if got := texts(s); got != "x" {
		t.Fatalf("answer %q, want %q", got, "x")
	}
}
