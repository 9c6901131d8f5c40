package runner

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// BenchmarkRunLLM measures a run of an LLM agent on the offline model,
// whose final answer ends the run (the shape of agentrunner bench's app),
// on one session, with and without fsync.
func BenchmarkRunLLM(b *testing.B) {
	for _, sync := range []string{"fsync", "nosync"} {
		b.Run(sync, func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: sync == "nosync"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			root, err := llmagent.New(llmagent.Config{Name: "answer", Model: offline.New(offline.Config{})})
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(Config{AppName: testApp, Root: root, Store: db})
			if err != nil {
				b.Fatal(err)
			}
			k := store.SessionKey{App: testApp, User: "u", Session: "s"}
			if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := Request{UserID: k.User, SessionID: k.Session, NewMessage: userText(fmt.Sprint("hi ", i))}
				for _, err := range r.Stream(b.Context(), req) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
