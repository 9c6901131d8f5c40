package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/structpb"
)

// proc is the agentrunner binary running as a child process.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	logs   *logWatcher
	exited chan error
}

func startBinary(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append(noConsole(), args...)...)
	cmd.Env = append(cmd.Environ(), envAddr+"=", envData+"=", envConfig+"=", envHTTPAddr+"=", envHTTPPrefix+"=")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: watchLogs(pr), exited: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		pw.Close()
		p.exited <- err
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.logs.done
	})
	p.addr = p.logs.waitAddr(t, p.exited)
	return p
}

// TestKill9KeepsAcknowledgedEvents is the durability promise end to end:
// appends are acknowledged only once on disk, so a SIGKILL in the middle
// of concurrent appends loses none of the acknowledged ones, and the file
// opens clean afterwards.
func TestKill9KeepsAcknowledgedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "agentrunner.db")

	p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data)
	sessions := servicev1.NewSessionServiceClient(dial(t, p.addr))
	key := &servicev1.GetSessionRequest{AppName: "app", UserId: "u", SessionId: "s"}
	if _, err := sessions.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: "s"}); err != nil {
		t.Fatal(err)
	}

	// Writers append until their calls fail, recording what was acked.
	const writers = 8
	const killAfter = 300 // acknowledged appends before the kill
	type ack struct {
		id   string
		seq  uint64
		text string
	}
	var (
		mu     sync.Mutex
		acked  []ack
		lastOf = map[string]float64{} // writer -> last acked counter
	)
	enough := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%d", w)
			for i := 1; ; i++ {
				txt := fmt.Sprintf("%s-%d", name, i)
				delta, _ := structpb.NewStruct(map[string]any{name: i})
				resp, err := sessions.AppendEvent(context.Background(), &servicev1.AppendEventRequest{
					AppName: "app", UserId: "u", SessionId: "s",
					Event: &agentrunnerv1.Event{
						Author:  "user",
						Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: txt}}}},
						Actions: &agentrunnerv1.EventActions{StateDelta: delta},
					},
				})
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, ack{resp.GetEvent().GetId(), resp.GetEvent().GetSequence(), txt})
				lastOf[name] = float64(i)
				if len(acked) == killAfter {
					close(enough)
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-enough:
	case err := <-p.exited:
		t.Fatalf("server exited: %v\n%s", err, p.logs)
	case <-time.After(2 * time.Minute):
		t.Fatalf("fewer than %d appends acknowledged in 2 minutes\n%s", killAfter, p.logs)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	wg.Wait()
	t.Logf("%d appends acknowledged before SIGKILL", len(acked))

	// The file opens, and bbolt's consistency check passes.
	st, err := boltstore.Open(data, boltstore.Options{})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	if err := st.DB().View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Errorf("consistency check after kill -9: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A restarted server has every acknowledged event, in a gapless
	// sequence, and the state they set.
	p2 := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data)
	sessions = servicev1.NewSessionServiceClient(dial(t, p2.addr))
	got, err := sessions.GetSession(t.Context(), key)
	if err != nil {
		t.Fatalf("GetSession after restart: %v", err)
	}
	stored := map[string]*agentrunnerv1.Event{}
	for i, ev := range got.GetEvents() {
		if ev.GetSequence() != uint64(i+1) {
			t.Fatalf("event %d has sequence %d; sequences must be gapless", i, ev.GetSequence())
		}
		stored[ev.GetId()] = ev
	}
	for _, a := range acked {
		ev, ok := stored[a.id]
		if !ok {
			t.Errorf("acknowledged event %s (seq %d, %q) is missing", a.id, a.seq, a.text)
			continue
		}
		if ev.GetSequence() != a.seq || ev.GetContent().GetParts()[0].GetText() != a.text {
			t.Errorf("event %s stored as seq %d %q, acknowledged as seq %d %q", a.id, ev.GetSequence(), ev.GetContent().GetParts()[0].GetText(), a.seq, a.text)
		}
	}
	state := got.GetSession().GetState().GetFields()
	for name, last := range lastOf {
		// Unacknowledged appends may have landed too, so at least.
		if v := state[name].GetNumberValue(); v < last {
			t.Errorf("state %s = %v, want >= %v (last acknowledged)", name, v, last)
		}
	}

	// And a graceful stop exits 0.
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p2.exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p2.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit within 30s of SIGTERM\n%s", p2.logs)
	}
}
