// Package copytest fills stores through the store API with every kind of
// record storecopy carries, and reads them back through the same API, so
// that the tests of storecopy and of `agentrunner migrate-store` compare
// what a user of the copy would see, not only what the export returns.
//
// Like every package under store/, it must not import runner, server,
// cmd or examples.
package copytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/storecopy"
	"github.com/agentrunner/agentrunner/store/storetest"
)

// Store is a store that memory can index and storecopy can copy: both
// boltstore and pgstore.
type Store interface {
	store.Store
	storecopy.Target
	IndexSession(ctx context.Context, k store.SessionKey) error
	SearchMemory(ctx context.Context, q store.MemoryQuery) ([]store.MemoryHit, string, error)
}

// Apps and Users are the apps and users Fill spreads sessions over.
var (
	Apps  = []string{"alpha", "beta"}
	Users = []string{"ann", "bob", "cy"}
)

// Key is the key of session i.
func Key(i int) store.SessionKey {
	return store.SessionKey{App: Apps[i%len(Apps)], User: Users[i/len(Apps)%len(Users)], Session: fmt.Sprintf("s%06d", i)}
}

// Fill writes sessions 0..n-1 (Key) through the store API, workers of
// them at a time (a bbolt store batches concurrent writes into one
// commit, which makes a large store quick to fill).
func Fill(t testing.TB, s Store, n, workers int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fillSession(t.Context(), s, i); err != nil {
					errs <- fmt.Errorf("session %d: %w", i, err)
					return
				}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-t.Context().Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// fillSession writes session i: state of the three scopes (and a temp:
// key, which is never stored), events with state deltas, a tool call
// answered and one waiting, a runner's model call (spend), a client's
// append with an id, three versions of an artifact (the second deleted
// in every third session), a version of the user's artifact, a finished
// run, a pending one, and, in every other session, memory.
func fillSession(ctx context.Context, s Store, i int) error {
	k := Key(i)
	st, err := structpb.NewStruct(map[string]any{"n": i, "app:motto": fmt.Sprint("motto ", i%7), "user:lang": fmt.Sprint("lang ", i%5), "temp:scratch": true})
	if err != nil {
		return err
	}
	if _, err := s.CreateSession(ctx, k, st); err != nil {
		return err
	}
	if err := fillEvents(ctx, s, k, i); err != nil {
		return err
	}
	if err := fillArtifacts(ctx, s, k, i); err != nil {
		return err
	}
	if err := fillRuns(ctx, s, k, i); err != nil {
		return err
	}
	if i%2 == 0 {
		return s.IndexSession(ctx, k)
	}
	return nil
}

func textEvent(author, text string, delta map[string]any) *agentrunnerv1.Event {
	ev := &agentrunnerv1.Event{Author: author,
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
	if delta != nil {
		ev.Actions = &agentrunnerv1.EventActions{StateDelta: must(structpb.NewStruct(delta))}
	}
	return ev
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func callPart(call bool, id, name string) *agentrunnerv1.Part {
	if call {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name}}}
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name}}}
}

// fillEvents appends the session's events. The words differ by session
// (zebra in some, quokka in others) so that memory searches tell the
// sessions apart.
func fillEvents(ctx context.Context, s Store, k store.SessionKey, i int) error {
	animal := []string{"zebra", "quokka", "heron"}[i%3]
	look, wait := fmt.Sprint("look-", i), fmt.Sprint("wait-", i)
	events := []*agentrunnerv1.Event{
		textEvent("user", fmt.Sprintf("tell me about the %s number %d", animal, i), map[string]any{"step": 1, "user:seen": i, "app:last": k.Session}),
		{Author: "bot", LongRunningToolIds: []string{wait}, Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{callPart(true, look, "lookup"), callPart(true, wait, "approve")}}},
		{Author: "bot", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{callPart(false, look, "lookup")}}},
		storetest.SpendCall(i, time.Now(), []string{"flash", "pro"}[i%2], i%5 == 0),
		textEvent("bot", fmt.Sprintf("the %s lives far away", animal), map[string]any{"step": 2, "temp:x": 1}),
	}
	for _, ev := range events {
		if _, err := s.AppendEvent(ctx, k, ev); err != nil {
			return err
		}
	}
	client := textEvent("user", "a client's note", nil)
	client.Id = fmt.Sprint("client-", i)
	client.Timestamp = timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	_, _, err := s.AppendEventOnce(ctx, k, client)
	return err
}

func fillArtifacts(ctx context.Context, s Store, k store.SessionKey, i int) error {
	for v := range 3 {
		part := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("notes %d v%d", i, v+1)}}
		if _, err := s.SaveArtifact(ctx, k, "notes.txt", part); err != nil {
			return err
		}
	}
	if i%3 == 0 {
		if err := s.DeleteArtifact(ctx, k, "notes.txt", 2); err != nil {
			return err
		}
	}
	blob := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "application/octet-stream", Data: []byte{byte(i), 0, 255}}}}
	if _, err := s.SaveArtifact(ctx, k, "data.bin", blob); err != nil {
		return err
	}
	_, err := s.SaveArtifact(ctx, k, "user:profile", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprint("profile from ", k.Session)}})
	return err
}

// fillRuns writes a run that ran (pending, an event, succeeded) and one
// still pending, which ListUnfinishedRuns must find in the copy.
func fillRuns(ctx context.Context, s Store, k store.SessionKey, i int) error {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	run := &agentrunnerv1.Run{RunId: fmt.Sprintf("run-%d-a", i), AppName: k.App, UserId: k.User, SessionId: k.Session,
		RequestId: fmt.Sprint("req-", i), Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: timestamppb.New(t0)}
	if err := s.PutRun(ctx, run); err != nil {
		return err
	}
	run = proto.CloneOf(run)
	run.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	if _, _, err := s.AppendRunEvent(ctx, k, textEvent("bot", "ran", nil), run); err != nil {
		return err
	}
	run = proto.CloneOf(run)
	run.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	if err := s.PutRun(ctx, run); err != nil {
		return err
	}
	pending := &agentrunnerv1.Run{RunId: fmt.Sprintf("run-%d-b", i), AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: timestamppb.New(t0.Add(time.Minute))}
	return s.PutRun(ctx, pending)
}

// dumper writes what the store API returns, one line per record.
type dumper struct {
	t     testing.TB
	s     Store
	lines []string
}

var js = protojson.MarshalOptions{}

func (d *dumper) add(what string, ms ...proto.Message) {
	for _, m := range ms {
		d.lines = append(d.lines, what+" "+string(must(js.Marshal(m))))
	}
}

func (d *dumper) check(what string, err error) {
	if err != nil {
		d.t.Fatalf("%s: %v", what, err)
	}
}

// Dump reads sessions 0..n-1 back through the store API (sessions with
// merged state and events, tool calls, runs, artifacts, listings, spend,
// memory searches), one line per record, for comparison with another
// store's.
func Dump(t testing.TB, s Store, n int) []string {
	t.Helper()
	d := &dumper{t: t, s: s}
	for i := range n {
		d.session(Key(i))
	}
	d.shared()
	if !slices.ContainsFunc(d.lines, func(l string) bool { return strings.HasPrefix(l, "memory ") }) {
		t.Fatalf("the dump holds no memory hit: a test would not see memory lost")
	}
	return d.lines
}

func (d *dumper) session(k store.SessionKey) {
	ctx := d.t.Context()
	page := store.Page{Size: store.MaxPageSize}
	sess, evs, err := d.s.GetSession(ctx, k, store.GetOptions{})
	if errors.Is(err, store.ErrNotFound) {
		d.lines = append(d.lines, "gone "+k.String())
		return
	}
	d.check("GetSession", err)
	d.add("session", sess)
	d.add("event", protos(evs)...)
	calls, err := d.s.ListToolCalls(ctx, k)
	d.check("ListToolCalls", err)
	d.add("call", protos(calls)...)
	runs, _, err := d.s.ListRuns(ctx, k, page)
	d.check("ListRuns", err)
	d.add("run", protos(runs)...)
	for _, r := range runs {
		got, err := d.s.GetRun(ctx, r.GetRunId())
		d.check("GetRun", err)
		d.add("getrun", got)
		if r.GetRequestId() != "" {
			got, err := d.s.FindRunByRequest(ctx, k, r.GetRequestId())
			d.check("FindRunByRequest", err)
			d.add("byrequest", got)
		}
	}
	arts, _, err := d.s.ListArtifacts(ctx, k, page)
	d.check("ListArtifacts", err)
	d.add("artifact", protos(arts)...)
	for _, a := range arts {
		vs, _, err := d.s.ListArtifactVersions(ctx, k, a.GetFilename(), page)
		d.check("ListArtifactVersions", err)
		d.add("version", protos(vs)...)
		for _, v := range vs {
			part, meta, err := d.s.LoadArtifact(ctx, k, a.GetFilename(), v.GetVersion())
			d.check("LoadArtifact", err)
			d.add("load", part, meta)
		}
	}
}

// shared dumps the listings across sessions, spend and memory.
func (d *dumper) shared() {
	ctx := d.t.Context()
	unfinished, err := d.s.ListUnfinishedRuns(ctx)
	d.check("ListUnfinishedRuns", err)
	d.add("unfinished", protos(unfinished)...)
	from, to := time.Now().AddDate(0, 0, -2), time.Now().AddDate(0, 0, 1)
	for _, app := range Apps {
		d.sessions(app)
		runs, _, err := d.s.ListRunsOf(ctx, store.RunFilter{App: app}, store.Page{Size: store.MaxPageSize})
		d.check("ListRunsOf", err)
		d.add("runsof", protos(runs)...)
		for _, user := range append([]string{""}, Users...) {
			days, err := d.s.ListSpend(ctx, app, user, from, to)
			d.check("ListSpend", err)
			for _, ds := range days {
				d.add(fmt.Sprintf("spend %s %q %s %s", app, user, ds.Day, ds.Model), ds.Spend)
			}
			if user == "" {
				continue
			}
			for _, q := range []string{"zebra", "quokka far", "heron lives"} {
				hits, _, err := d.s.SearchMemory(ctx, store.MemoryQuery{App: app, User: user, Text: q, Page: store.Page{Size: store.MaxPageSize}})
				d.check("SearchMemory", err)
				for _, h := range hits {
					d.add(fmt.Sprintf("memory %s %s %q %s %.6f", app, user, q, h.SessionID, h.Score), h.Event)
				}
			}
		}
	}
}

// sessions dumps the listing of app's sessions, page by page.
func (d *dumper) sessions(app string) {
	page := store.Page{Size: 37}
	for {
		ss, next, err := d.s.ListSessions(d.t.Context(), app, "", page)
		d.check("ListSessions", err)
		d.add("list "+app, protos(ss)...)
		if next == "" {
			return
		}
		page.Token = next
	}
}

func protos[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// Equal fails t at the first line where two dumps differ.
func Equal(t testing.TB, what string, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: line %d differs:\n got  %s\n want %s", what, i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d lines, want %d", what, len(got), len(want))
	}
}

// Continue writes to a copied store what a server would next: an answer
// to session 3's waiting call, a model call, a client's retry of its
// append, new artifact versions, a run whose request id is taken, a run
// record changed, a session again under a taken key and a new one, memory
// added again, and session 5 deleted. It returns what each write said
// (the stored records, or which sentinel error), for comparison with the
// same writes to the source; the stores' ids and clocks must then agree.
func Continue(t testing.TB, s Store) []string {
	t.Helper()
	ctx := t.Context()
	d := &dumper{t: t, s: s}
	res := func(what string, err error, ms ...proto.Message) {
		line := fmt.Sprintf("%s exists=%t notfound=%t", what, errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound))
		for _, m := range ms {
			line += " " + string(must(js.Marshal(m)))
		}
		d.lines = append(d.lines, line)
	}
	k := Key(3)
	ev, err := s.AppendEvent(ctx, k, &agentrunnerv1.Event{Author: "user", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{callPart(false, "wait-3", "approve")}}})
	res("answer", err, ev)
	ev, err = s.AppendEvent(ctx, k, storetest.SpendCall(9, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), "flash", false))
	res("spend", err, ev)
	client := textEvent("user", "a client's note", nil)
	client.Id, client.Timestamp = "client-3", timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))
	ev, existed, err := s.AppendEventOnce(ctx, k, client)
	res(fmt.Sprint("retry existed=", existed), err, ev)
	v, err := s.SaveArtifact(ctx, k, "notes.txt", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "v4"}})
	res("artifact", err, v)
	v, err = s.SaveArtifact(ctx, k, "user:profile", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "again"}})
	res("user artifact", err, v)
	t0 := timestamppb.New(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	err = s.PutRun(ctx, &agentrunnerv1.Run{RunId: "run-new", AppName: k.App, UserId: k.User, SessionId: k.Session, RequestId: "req-3",
		Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: t0})
	res("taken request id", err)
	run, err := s.GetRun(ctx, "run-3-b")
	res("get run", err)
	run.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	res("run running", s.PutRun(ctx, run))
	_, err = s.CreateSession(ctx, k, nil)
	res("taken key", err)
	sess, err := s.CreateSession(ctx, store.SessionKey{App: k.App, User: k.User, Session: "fresh"}, must(structpb.NewStruct(map[string]any{"app:new": 1})))
	res("new session", err, sess)
	res("index again", s.IndexSession(ctx, k))
	res("delete", s.DeleteSession(ctx, Key(5)))
	return d.lines
}
