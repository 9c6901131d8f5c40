package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// streamedArtifacts sends req streaming and folds the artifact updates as
// a client that keeps artifacts by id does: it returns the ids in the
// order they first came, the text each ended with, and the last event.
func streamedArtifacts(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) ([]a2a.ArtifactID, map[a2a.ArtifactID]string, a2a.Event) {
	t.Helper()
	var ids []a2a.ArtifactID
	texts := map[a2a.ArtifactID]string{}
	var last a2a.Event
	for ev, err := range c.SendStreamingMessage(t.Context(), req) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		last = ev
		up, ok := ev.(*a2a.TaskArtifactUpdateEvent)
		if !ok {
			continue
		}
		id := up.Artifact.ID
		if _, seen := texts[id]; !seen {
			ids = append(ids, id)
		}
		var b strings.Builder
		for _, p := range up.Artifact.Parts {
			b.WriteString(p.Text())
			if d := p.Data(); d != nil {
				b.WriteString("<data>")
			}
		}
		if up.Append {
			texts[id] += b.String()
		} else {
			texts[id] = b.String()
		}
	}
	return ids, texts, last
}

// taskArtifacts returns GetTask's artifact ids and texts, as
// streamedArtifacts does.
func taskArtifacts(t *testing.T, c *a2aclient.Client, id a2a.TaskID) ([]a2a.ArtifactID, map[a2a.ArtifactID]string) {
	t.Helper()
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	var ids []a2a.ArtifactID
	texts := map[a2a.ArtifactID]string{}
	for _, a := range task.Artifacts {
		ids = append(ids, a.ID)
		var b strings.Builder
		for _, p := range a.Parts {
			b.WriteString(p.Text())
			if d := p.Data(); d != nil {
				b.WriteString("<data>")
			}
		}
		texts[a.ID] = b.String()
	}
	return ids, texts
}

// TestA2AStreamedArtifactIDs: the artifacts a streamed task ends with
// have the ids (and the content) GetTask gives them, for an answer
// streamed in chunks and for the answers of a task resumed by a reply
// (whose stream goes on after the answers of the task's first part).
func TestA2AStreamedArtifactIDs(t *testing.T) {
	_, console, _, _ := startConsole(t)

	t.Run("chunked answer", func(t *testing.T) {
		c, _ := a2aClient(t, console, "slow", a2a.TransportProtocolJSONRPC)
		ids, texts, last := streamedArtifacts(t, c, textMessage("", "name your artifacts"))
		got, gotTexts := taskArtifacts(t, c, last.TaskInfo().TaskID)
		if len(ids) == 0 || !slices.Equal(ids, got) {
			t.Fatalf("streamed artifact ids %q, GetTask's %q; want the same", ids, got)
		}
		for _, id := range ids {
			if texts[id] != gotTexts[id] {
				t.Errorf("artifact %s streamed as %q, GetTask has %q", id, texts[id], gotTexts[id])
			}
		}
	})

	t.Run("resumed task", func(t *testing.T) {
		c, _ := a2aClient(t, console, "orders", a2a.TransportProtocolJSONRPC)
		firstIDs, _, last := streamedArtifacts(t, c, textMessage("", `call cancel_order {"order_id": "42"}`))
		st, ok := last.(*a2a.TaskStatusUpdateEvent)
		if !ok || st.Status.State != a2a.TaskStateInputRequired || st.Status.Message == nil || len(st.Status.Message.Parts) != 1 {
			t.Fatalf("first part ended with %#v; want input-required on the confirmation", last)
		}
		call, _ := st.Status.Message.Parts[0].Data().(map[string]any)
		answer := a2a.NewDataPart(map[string]any{"id": call["id"], "name": call["name"], "response": map[string]any{"confirmed": true}})
		answer.SetMeta("adk_type", "function_response")
		reply := a2a.NewMessageForTask(a2a.MessageRoleUser, st, answer)
		replyIDs, replyTexts, end := streamedArtifacts(t, c, &a2a.SendMessageRequest{Message: reply})
		if st, ok := end.(*a2a.TaskStatusUpdateEvent); !ok || st.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("reply ended with %#v; want completed", end)
		}
		got, gotTexts := taskArtifacts(t, c, st.TaskID)
		if want := append(slices.Clone(firstIDs), replyIDs...); len(replyIDs) == 0 || !slices.Equal(want, got) {
			t.Fatalf("streamed artifact ids %q then %q, GetTask's %q; want the same", firstIDs, replyIDs, got)
		}
		for _, id := range replyIDs {
			if replyTexts[id] != gotTexts[id] {
				t.Errorf("artifact %s streamed as %q, GetTask has %q", id, replyTexts[id], gotTexts[id])
			}
		}
	})
}
