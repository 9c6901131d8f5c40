package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The kill -9 test of ForkSession and RewindSession: a server killed in
// the middle of concurrent forks and rewinds, restarted, holds each fork
// whole or not at all (its events, state and artifact versions) and each
// rewind whole or not at all (its event and the artifact versions it
// names, and no version it did not name), every acknowledged one
// included. On bbolt and on PostgreSQL.

const (
	forkSrcEvents = 120 // events of the source session
	forkSrcSaves  = 12  // versions of its artifact "f", one every 10 events
	rewindRounds  = 6   // invocations of each rewound session
)

func TestKill9DuringForkAndRewindBolt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	killDuringForks(t, buildForkBinary(t, dir), filepath.Join(dir, "agentrunner.db"))
}

func TestKill9DuringForkAndRewindPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := pg.URL(t)
	killDuringForks(t, buildForkBinary(t, t.TempDir()), url)
}

func buildForkBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "agentrunner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// forkAcks is what the server acknowledged before the kill.
type forkAcks struct {
	mu      sync.Mutex
	forks   map[string]uint64 // fork id -> up_to_sequence
	rewinds map[string]string // rewind event id -> session
	n       int
}

func (a *forkAcks) add(f func()) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	f()
	a.n++
	return a.n
}

func killDuringForks(t *testing.T, bin, data string) {
	p := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data)
	conn := dial(t, p.addr)
	sc, ac := servicev1.NewSessionServiceClient(conn), servicev1.NewArtifactServiceClient(conn)
	src := makeForkSource(t, sc, ac)
	for w := range 2 {
		makeRewindSession(t, sc, ac, fmt.Sprintf("rw%d", w))
	}
	acks := &forkAcks{forks: map[string]uint64{}, rewinds: map[string]string{}}
	const killAfter = 40
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 1; ; i++ {
				id, upTo := fmt.Sprintf("fork-%d-%d", w, i), uint64((i*37+w*11)%forkSrcEvents+1)
				_, err := sc.ForkSession(context.Background(), &servicev1.ForkSessionRequest{AppName: "app", UserId: "u", SessionId: "src", UpToSequence: upTo, NewSessionId: id})
				if err != nil {
					return
				}
				if acks.add(func() { acks.forks[id] = upTo }) >= killAfter {
					once.Do(func() { close(enough) })
				}
			}
		})
	}
	for w := range 2 {
		wg.Go(func() {
			session := fmt.Sprintf("rw%d", w)
			for i := 0; ; i++ {
				resp, err := sc.RewindSession(context.Background(), &servicev1.RewindSessionRequest{AppName: "app", UserId: "u", SessionId: session, BeforeInvocationId: fmt.Sprintf("inv%d", i%rewindRounds+1)})
				if err != nil {
					return
				}
				acks.add(func() { acks.rewinds[resp.GetEvent().GetId()] = session })
			}
		})
	}
	select {
	case <-enough:
	case err := <-p.exited:
		t.Fatalf("server exited: %v\n%s", err, p.logs)
	case <-time.After(2 * time.Minute):
		t.Fatalf("fewer than %d forks acknowledged in 2 minutes\n%s", killAfter, p.logs)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	wg.Wait()
	t.Logf("%d forks and %d rewinds acknowledged before SIGKILL", len(acks.forks), len(acks.rewinds))

	p2 := startBinary(t, bin, "--addr", "127.0.0.1:0", "--data", data)
	conn = dial(t, p2.addr)
	sc, ac = servicev1.NewSessionServiceClient(conn), servicev1.NewArtifactServiceClient(conn)
	checkForks(t, sc, ac, src, acks)
	for w := range 2 {
		checkRewinds(t, sc, ac, fmt.Sprintf("rw%d", w), acks)
	}
}

func textContent(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// makeForkSource makes session app/u/src: forkSrcEvents events, event i
// setting k<i> = i, every tenth saving a version of "f" ("f<i>"), and
// returns its events.
func makeForkSource(t *testing.T, sc servicev1.SessionServiceClient, ac servicev1.ArtifactServiceClient) []*agentrunnerv1.Event {
	t.Helper()
	ctx := t.Context()
	if _, err := sc.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: "src"}); err != nil {
		t.Fatal(err)
	}
	var out []*agentrunnerv1.Event
	for i := 1; i <= forkSrcEvents; i++ {
		delta, _ := structpb.NewStruct(map[string]any{fmt.Sprintf("k%d", i): i})
		ev := &agentrunnerv1.Event{Author: "user", InvocationId: fmt.Sprintf("inv%d", i), Content: textContent(strings.Repeat("x", 500)),
			Actions: &agentrunnerv1.EventActions{StateDelta: delta}}
		if i%(forkSrcEvents/forkSrcSaves) == 0 {
			v, err := ac.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u", SessionId: "src", Filename: "f",
				Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("f%d", i)}}})
			if err != nil {
				t.Fatal(err)
			}
			ev.Actions.ArtifactDelta = map[string]int64{"f": v.GetVersion()}
		}
		resp, err := sc.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "app", UserId: "u", SessionId: "src", Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.GetEvent())
	}
	return out
}

// makeRewindSession makes a session of rewindRounds invocations, each
// setting "round" and saving a version of "r" named by its event.
func makeRewindSession(t *testing.T, sc servicev1.SessionServiceClient, ac servicev1.ArtifactServiceClient, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := sc.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "app", UserId: "u", SessionId: id}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= rewindRounds; i++ {
		v, err := ac.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u", SessionId: id, Filename: "r",
			Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("r%d", i)}}})
		if err != nil {
			t.Fatal(err)
		}
		delta, _ := structpb.NewStruct(map[string]any{"round": i})
		ev := &agentrunnerv1.Event{Author: "user", InvocationId: fmt.Sprintf("inv%d", i), Content: textContent("round"),
			Actions: &agentrunnerv1.EventActions{StateDelta: delta, ArtifactDelta: map[string]int64{"r": v.GetVersion()}}}
		if _, err := sc.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: "app", UserId: "u", SessionId: id, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkForks checks every fork the restarted server holds against the
// source, and that every acknowledged one is there.
func checkForks(t *testing.T, sc servicev1.SessionServiceClient, ac servicev1.ArtifactServiceClient, src []*agentrunnerv1.Event, acks *forkAcks) {
	ctx := t.Context()
	list, err := sc.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: "app", UserId: "u", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, s := range list.GetSessions() {
		if !strings.HasPrefix(s.GetSessionId(), "fork-") {
			continue
		}
		held[s.GetSessionId()] = true
		got, err := sc.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u", SessionId: s.GetSessionId()})
		if err != nil {
			t.Fatal(err)
		}
		upTo := got.GetSession().GetForkedFrom().GetSequence()
		if want, ok := acks.forks[s.GetSessionId()]; ok && want != upTo {
			t.Errorf("fork %s is of event %d, acknowledged as of %d", s.GetSessionId(), upTo, want)
		}
		checkFork(t, ac, s.GetSessionId(), got, src[:upTo])
	}
	for id := range acks.forks {
		if !held[id] {
			t.Errorf("acknowledged fork %s is missing", id)
		}
	}
	t.Logf("%d forks held after the restart, each whole", len(held))
}

// checkFork checks one fork against the source's events it copied.
func checkFork(t *testing.T, ac servicev1.ArtifactServiceClient, id string, got *servicev1.GetSessionResponse, src []*agentrunnerv1.Event) {
	t.Helper()
	if len(got.GetEvents()) != len(src) || got.GetSession().GetLastSequence() != uint64(len(src)) {
		t.Errorf("fork %s holds %d events (last %d), want %d", id, len(got.GetEvents()), got.GetSession().GetLastSequence(), len(src))
		return
	}
	var lastSave int64
	for i, ev := range got.GetEvents() {
		if !proto.Equal(ev, src[i]) {
			t.Errorf("fork %s event %d differs from the source's", id, i+1)
			return
		}
		if v, ok := ev.GetActions().GetArtifactDelta()["f"]; ok {
			lastSave = v
		}
	}
	if n := len(got.GetSession().GetState().GetFields()); n != len(src) {
		t.Errorf("fork %s has %d state keys, want %d", id, n, len(src))
	}
	versions, err := ac.ListArtifactVersions(t.Context(), &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u", SessionId: id, Filename: "f"})
	if lastSave == 0 {
		if err == nil && len(versions.GetVersions()) > 0 {
			t.Errorf("fork %s of no save has versions of f", id)
		}
		return
	}
	if err != nil || len(versions.GetVersions()) != int(lastSave) || versions.GetVersions()[0].GetVersion() != lastSave {
		t.Errorf("fork %s: versions of f = %v, %v; want 1..%d", id, versions.GetVersions(), err, lastSave)
	}
}

// checkRewinds checks a rewound session: every rewind event is whole (its
// artifact versions are there, with the content of the version before
// the invocation it names), no version of "r" is there that no event
// names, and every acknowledged rewind is there.
func checkRewinds(t *testing.T, sc servicev1.SessionServiceClient, ac servicev1.ArtifactServiceClient, id string, acks *forkAcks) {
	ctx := t.Context()
	got, err := sc.GetSession(ctx, &servicev1.GetSessionRequest{AppName: "app", UserId: "u", SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	named := map[int64]bool{}
	seen := map[string]bool{}
	for _, ev := range got.GetEvents() {
		seen[ev.GetId()] = true
		for _, v := range ev.GetActions().GetArtifactDelta() {
			named[v] = true
		}
	}
	versions, err := ac.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u", SessionId: id, Filename: "r", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions.GetVersions() {
		if !named[v.GetVersion()] {
			t.Errorf("%s: version %d of r is named by no event: half a rewind", id, v.GetVersion())
		}
		delete(named, v.GetVersion())
	}
	for v := range named {
		t.Errorf("%s: an event names version %d of r, which is missing", id, v)
	}
	for ev, session := range acks.rewinds {
		if session == id && !seen[ev] {
			t.Errorf("%s: acknowledged rewind event %s is missing", id, ev)
		}
	}
	t.Logf("%s: %d events, %d versions of r, each named by its event", id, len(got.GetEvents()), len(versions.GetVersions()))
}
