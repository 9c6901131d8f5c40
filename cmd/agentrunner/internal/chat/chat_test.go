package chat_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/demo"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/chat"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/server"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// appsYAML is the tree the tests talk to besides the demo app: a triage
// agent that transfers billing questions (the offline model's "transfer"
// behaviour), and an app whose model always fails.
const appsYAML = `
apps:
  - name: support
    root_agent:
      name: triage
      description: Routes the user.
      llm: { model: gated, instruction: Route billing questions to billing. }
      sub_agents:
        - name: billing
          description: Answers billing questions.
          llm: { model: gated, instruction: You answer billing questions. }
  - name: broken
    root_agent:
      name: fragile
      llm: { model: failing, instruction: Fail. }
  - name: orders
    function_tools:
      - name: get_order
        parameters: { type: object, properties: { order_id: { type: string } }, required: [order_id] }
    root_agent:
      name: clerk
      llm: { model: gated, tools: [get_order, exit_loop], require_confirmation: [exit_loop] }
  - name: priced
    root_agent:
      name: till
      llm: { model: priced }
  - name: mixed
    root_agent:
      name: front
      description: Routes the user.
      llm: { model: priced, instruction: Route billing questions to billing. }
      sub_agents:
        - name: billing
          description: Answers billing questions on an unpriced model.
          llm: { model: gated }
`

// gatedModel is the offline model, except that while the test holds its
// gate, a streamed text answer stops after its partial chunks and before
// its complete response: the partial text is then on the screen and the
// complete event is not, which shows the chat streams.
type gatedModel struct {
	inner *offline.Model
	mu    sync.Mutex
	gate  chan struct{} // nil: open
}

// hold closes the gate until the returned release is called.
func (m *gatedModel) hold() (release func()) {
	ch := make(chan struct{})
	m.mu.Lock()
	m.gate = ch
	m.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			m.gate = nil
			m.mu.Unlock()
			close(ch)
		})
	}
}

func (m *gatedModel) Name() string { return m.inner.Name() }

func (m *gatedModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		streamed := false
		for resp, err := range m.inner.Generate(ctx, req, stream) {
			if err == nil && resp.Partial {
				streamed = true
			}
			if err == nil && streamed && !resp.Partial {
				m.mu.Lock()
				gate := m.gate
				m.mu.Unlock()
				if gate != nil {
					select {
					case <-gate:
					case <-ctx.Done():
						yield(nil, ctx.Err())
						return
					}
				}
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

type failingModel struct{}

func (failingModel) Name() string { return "failing" }

func (failingModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(nil, errors.New("the model is down"))
	}
}

// startServer serves the demo app and appsYAML's apps over real gRPC on a
// loopback port, with a bbolt store in a temporary directory.
func startServer(t *testing.T) (addr string, gated *gatedModel) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), boltstore.Options{Logger: log, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	gated = &gatedModel{inner: offline.New(offline.Config{Name: "gated"})}
	cfg, err := apps.Parse("apps.yaml", []byte(appsYAML))
	if err != nil {
		t.Fatal(err)
	}
	built, err := apps.Build(t.Context(), cfg, func(_ context.Context, name string) (model.Model, error) {
		switch name {
		case "failing":
			return failingModel{}, nil
		case "priced":
			return pricedModel{offline.New(offline.Config{Name: "priced"})}, nil
		}
		return gated, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apps.NewRegistry(apps.Config{Store: st, Memory: memory.NewIndex(st), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range append(built, demo.App(), snailApp(t), unreadyApp(t)) {
		if _, err := reg.Register(app); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewGRPCServer(server.New(server.Config{Store: st, Apps: server.RunnerApps(reg), Logger: log}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return lis.Addr().String(), gated
}

// takeYourTime is the message the snail agent never finishes answering:
// it streams a partial "thinking..." and then waits until its run is
// cancelled, the slowest of answers, with no clock involved.
const takeYourTime = "take your time"

// snailApp is the app "slow": its agent snail answers takeYourTime as
// above, and any other message at once with its length.
func snailApp(t *testing.T) apps.App {
	t.Helper()
	snail, err := agent.New(agent.Config{Name: "snail", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			msg := ctx.UserContent().GetParts()[0].GetText()
			if msg != takeYourTime {
				yield(modelSays(fmt.Sprintf("heard %d characters", len(msg)), false), nil)
				return
			}
			if !yield(modelSays("thinking...", true), nil) {
				return
			}
			<-ctx.Done()
			yield(nil, ctx.Err())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return apps.App{Name: "slow", Root: snail}
}

func modelSays(text string, partial bool) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Partial: partial, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// unreadyReason is why the app "unready" cannot run, as a server says it
// of an app whose model has no API key.
const unreadyReason = "model gpt-4o (openai) needs OPENAI_API_KEY set"

func unreadyApp(t *testing.T) apps.App {
	t.Helper()
	root, err := agent.New(agent.Config{Name: "idle", Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(func(*agentrunnerv1.Event, error) bool) {}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return apps.App{Name: "unready", Root: root, Unavailable: unreadyReason}
}

// clients dials addr for the test's own look at the server.
func clients(t *testing.T, addr string) (servicev1.SessionServiceClient, servicev1.RunnerServiceClient) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return servicev1.NewSessionServiceClient(conn), servicev1.NewRunnerServiceClient(conn)
}

// userMessages reads back, through the API, the messages the user sent to
// a session.
func userMessages(t *testing.T, addr, app, user, session string) []string {
	t.Helper()
	sessions, _ := clients(t, addr)
	resp, err := sessions.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: app, UserId: user, SessionId: session, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range resp.GetEvents() {
		if ev.GetAuthor() == "user" {
			out = append(out, ev.GetContent().GetParts()[0].GetText())
		}
	}
	return out
}

// syncBuffer is an output the client writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// session is one run of `agentrunner chat`, typed into through a pipe.
type session struct {
	t        *testing.T
	in       *io.PipeWriter
	out, err *syncBuffer
	done     chan error
	result   error
	ended    bool
}

func startChat(t *testing.T, args ...string) *session {
	t.Helper()
	r, w := io.Pipe()
	s := &session{t: t, in: w, out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan error, 1)}
	go func() {
		err := chat.Main(t.Context(), args, r, s.out, s.err)
		r.CloseWithError(errors.New("chat ended")) // unblock a pending type
		s.done <- err
	}()
	t.Cleanup(func() {
		w.Close()
		if !s.ended {
			s.wait()
		}
	})
	return s
}

// typeLine sends one line, as a person pressing Enter.
func (s *session) typeLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("typing %q: %v\noutput:\n%s", line, err, s.out)
	}
}

const waitFor = 20 * time.Second

// expect waits until the output matches every pattern (regexps), failing
// after a bound.
func (s *session) expect(patterns ...string) {
	s.t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p)
	}
	deadline := time.Now().Add(waitFor)
	for {
		out := s.out.String()
		var missing []string
		for _, re := range res {
			if !re.MatchString(out) {
				missing = append(missing, re.String())
			}
		}
		if len(missing) == 0 {
			return
		}
		select {
		case err := <-s.done:
			s.done <- err
			s.t.Fatalf("chat ended (%v) before the output matched %q\noutput:\n%s\nstderr:\n%s", err, missing, out, s.err)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("output did not match %q within %v\noutput:\n%s\nstderr:\n%s", missing, waitFor, out, s.err)
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's output
	}
}

// wait returns what Main returned, failing if it does not return in time.
func (s *session) wait() error {
	s.t.Helper()
	if s.ended {
		return s.result
	}
	select {
	case err := <-s.done:
		s.ended, s.result = true, err
		return err
	case <-time.After(waitFor):
		s.t.Fatalf("chat did not end within %v\noutput:\n%s", waitFor, s.out)
		return nil
	}
}

func TestChatStreamsTransfersAndResumes(t *testing.T) {
	addr, gated := startServer(t)

	c := startChat(t, "--addr", addr, "--app", "support", "--user", "ann", "--session", "s1")
	c.expect(`new session s1 of app support \(resume with --session s1\)\n`, `you> $`)

	// The triage agent transfers; billing's answer streams in partial
	// chunks under its name before its complete event arrives.
	release := gated.hold()
	defer release()
	c.typeLine("I have a billing question")
	c.expect(
		`  -> triage calls transfer_to_agent\(\{"agent_name":"billing"\}\)\n`,
		`  => triage transfers to billing\n`,
		`\[billing\] offline model: you said: I have a billing question$`,
	)
	if out := c.out.String(); strings.Contains(out, "(events #") {
		t.Fatalf("the run ended before the model's complete response was released:\n%s", out)
	}
	release()
	c.expect(`\[billing\] offline model: you said: I have a billing question\n  \(events #1-#4 · tokens \d+ · cost unknown\)\nyou> $`)
	if n := strings.Count(c.out.String(), "offline model: you said: I have a billing question"); n != 1 {
		t.Errorf("the streamed answer was printed %d times, want once:\n%s", n, c.out)
	}

	c.typeLine("/session")
	c.expect(`session s1 \(app support, user ann; resume with --session s1\)\n`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatalf("chat after /quit: %v", err)
	}

	// A new client resumes the session: the history, with its sequence
	// numbers, then billing (the last to answer) answers directly and the
	// new events continue the numbering.
	c = startChat(t, "--addr", addr, "--app", "support", "--user", "ann", "--session", "s1")
	c.expect(
		`resumed session s1 of app support \(4 events\)\n`,
		`#1 you> I have a billing question\n`,
		`#2   -> triage calls transfer_to_agent`,
		`  => triage transfers to billing\n`,
		`#4 \[billing\] offline model: you said: I have a billing question\n`,
		`you> $`,
	)
	c.typeLine("and another question")
	c.expect(`you> \[billing\] offline model: you said: and another question\n  \(events #5-#6 · tokens \d+ · cost unknown\)\nyou> $`)
	if n := strings.Count(c.out.String(), "transfers to"); n != 1 {
		t.Errorf("resumed run transferred again (%d transfer lines):\n%s", n, c.out)
	}
	c.in.Close() // Ctrl-D
	if err := c.wait(); err != nil {
		t.Fatalf("chat after end of input: %v", err)
	}

	// The store agrees.
	var out, errOut syncBuffer
	if err := chat.Sessions(t.Context(), []string{"show", "--addr", addr, "--app", "support", "--user", "ann", "s1"}, &out, &errOut); err != nil {
		t.Fatalf("sessions show: %v\n%s", err, &errOut)
	}
	for _, want := range []string{"session s1  app support  user ann  events 6", "#5 you> and another question\n", "#6 [billing] offline model: you said: and another question\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("sessions show lacks %q:\n%s", want, &out)
		}
	}
}

func TestChatDemoAppWithoutStreaming(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "demo", "--user", "bo", "--no-stream")
	c.expect(`new session [0-9a-f]{32} of app demo`)
	c.typeLine("Hello there")
	c.expect(
		`\[greeter\] Hello bo! This is turn 1 of this session`,
		`  => greeter transfers to pipeline\n`,
		`\[echo\] You said: "Hello there"\n`,
		`  => tick escalates\n`,
		`\[summary\] Summary: 2 words, 10 letters, turn 1.\n  \(events #1-#\d+\)\nyou> $`,
	)
	c.typeLine("/exit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestChatAgentErrorIsShownAndChatGoesOn(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "broken", "--user", "cy", "--session", "b1")
	c.typeLine("hello?")
	// The failure is stored as the agent's event (#2), then reported in
	// band.
	c.expect(`! fragile: UNKNOWN .*the model is down\n! error from agent: Unknown: agent fragile: .*the model is down\n  \(events #1-#2\)\nyou> $`)
	c.typeLine("still there?")
	c.expect(`\(events #3-#4\)\nyou> $`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestChatUnknownApp(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "nope", "--user", "dee")
	err := c.wait()
	want := `NotFound: app "nope" is not served by ` + addr + `; it serves: broken, demo, mixed, orders, priced, slow, support, unready`
	if err == nil || err.Error() != want {
		t.Fatalf("chat --app nope: got error %v, want %q", err, want)
	}
	// Nothing was created for the app that does not exist.
	var out, errOut syncBuffer
	if err := chat.Sessions(t.Context(), []string{"list", "--addr", addr, "--app", "nope", "--user", ""}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 1 {
		t.Errorf("sessions list --app nope shows sessions:\n%s", &out)
	}
}

func TestChatServerDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	c := startChat(t, "--addr", addr, "--app", "demo")
	err = c.wait()
	if err == nil || !strings.Contains(err.Error(), "server unavailable (is `agentrunner serve` running?)") {
		t.Fatalf("chat against no server: got %v", err)
	}
}

func TestChatAddrFromEnvironment(t *testing.T) {
	addr, _ := startServer(t)
	t.Setenv("AGENTRUNNER_ADDR", addr)
	c := startChat(t, "--app", "demo", "--user", "eve", "--session", "env1")
	c.expect(`new session env1 of app demo`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

func TestSessions(t *testing.T) {
	addr, _ := startServer(t)
	run := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut syncBuffer
		err := chat.Sessions(t.Context(), append(args[:1:1], append([]string{"--addr", addr, "--app", "demo"}, args[1:]...)...), &out, &errOut)
		return out.String(), err
	}

	// Two sessions of fay, one of gus, made by chatting.
	for _, s := range []struct{ user, id string }{{"fay", "f1"}, {"fay", "f2"}, {"gus", "g1"}} {
		c := startChat(t, "--addr", addr, "--app", "demo", "--user", s.user, "--session", s.id, "--no-stream")
		c.typeLine("hi")
		c.expect(`\[summary\] Summary: 1 word, 2 letters, turn 1.\n  \(events #1-#8\)\n`)
		c.typeLine("/quit")
		if err := c.wait(); err != nil {
			t.Fatal(err)
		}
	}

	out, err := run("list", "--user", "fay")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^USER +SESSION +EVENTS +UPDATED\nfay +f1 +8  \S+ \S+\nfay +f2 +8  \S+ \S+\n$`).MatchString(out) {
		t.Errorf("sessions list --user fay:\n%s", out)
	}
	out, err = run("list", "--user", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 4 || !strings.Contains(out, "gus ") {
		t.Errorf("sessions list of every user, want a header and 3 sessions:\n%s", out)
	}

	out, err = run("show", "--user", "fay", "--events", "0", "f1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"session f1  app demo  user fay  events 8",
		`"turns":1`,
		"#1 you> hi\n",
		"#2 [greeter] Hello fay! This is turn 1",
		"  => greeter transfers to pipeline\n",
		"#8 [summary] Summary: 1 word, 2 letters, turn 1.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sessions show f1 lacks %q:\n%s", want, out)
		}
	}
	out, err = run("show", "--user", "fay", "--events", "2", "f1")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "#6 ") || !strings.Contains(out, "#7 ") || !strings.Contains(out, "#8 ") {
		t.Errorf("sessions show --events 2 should show #7 and #8 only:\n%s", out)
	}

	out, err = run("delete", "--user", "fay", "f1")
	if err != nil || out != "deleted session f1\n" {
		t.Fatalf("sessions delete f1: %q, %v", out, err)
	}
	out, err = run("list", "--user", "fay")
	if err != nil || strings.Contains(out, "f1") || !strings.Contains(out, "f2") {
		t.Errorf("sessions list after delete (%v):\n%s", err, out)
	}

	// What is not there is NotFound, said plainly.
	for _, cmd := range []string{"show", "delete"} {
		_, err = run(cmd, "--user", "fay", "f1")
		if want := "NotFound: session demo/fay/f1: not found"; err == nil || err.Error() != want {
			t.Errorf("sessions %s of a deleted session: got %v, want %q", cmd, err, want)
		}
	}
}

// TestSessionsUsage: -h prints the usage, and command lines that cannot
// work are usage errors, found before any call to a server.
func TestSessionsUsage(t *testing.T) {
	const addr = "127.0.0.1:1" // nothing listens: no call is made
	for _, args := range [][]string{{"-h"}, {"list", "-h"}} {
		var out, errOut syncBuffer
		if err := chat.Sessions(t.Context(), args, &out, &errOut); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "agentrunner sessions show   [--app APP]") {
			t.Errorf("sessions %q: got %v and usage\n%s", args, err, &errOut)
		}
	}

	// Command lines that cannot work.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "sessions: missing command (list, show, delete, fork or rewind)"},
		{[]string{"frobnicate"}, `sessions: unknown command "frobnicate" (want list, show, delete, fork or rewind)`},
		{[]string{"fork", "--addr", addr}, "sessions fork: want one SESSION argument"},
		{[]string{"rewind", "--addr", addr, "s1"}, "sessions rewind: --before RUN_ID is required"},
		{[]string{"show", "--addr", addr}, "sessions show: want one SESSION argument"},
		{[]string{"delete", "--addr", addr, "a", "b"}, "sessions delete: want one SESSION argument"},
	} {
		var out, errOut syncBuffer
		err := chat.Sessions(t.Context(), tc.args, &out, &errOut)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, chat.ErrUsage) {
			t.Errorf("sessions %q: got %v, want %q marked as a usage error", tc.args, err, tc.want)
		}
	}
}

// TestChatAnswersWaitingCalls checks that the chat asks the person to
// answer what a run waits on: a JSON object for a tool the client
// executes (re-asking after one that is not), y or n for a confirmation.
func TestChatAnswersWaitingCalls(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "orders", "--user", "di", "--no-stream")
	c.expect(`new session [0-9a-f]{32} of app orders`)
	c.typeLine(`call get_order {"order_id": "42"}`)
	c.expect(`  -> clerk calls get_order\({"order_id":"42"}\)\n`, `\? answer get_order\({"order_id":"42"}\) with a JSON object: $`)
	c.typeLine(`shipped`)
	c.expect(`  \(not an answer; try again\)\n\? answer get_order`)
	c.typeLine(`{"status": "shipped"}`)
	c.expect(`\[clerk\] offline model: get_order returned {"status":"shipped"}\n  \(events #\d+-#\d+ · tokens \d+ · cost unknown\)\nyou> $`)
	c.typeLine(`call exit_loop`)
	c.expect(`  -> clerk calls request_confirmation\(`, `\? confirm exit_loop\({}\) \[y/n\] $`)
	c.typeLine(`n`)
	c.expect(`  <- exit_loop returned {"error":"the user rejected this call; it did not run"}\n`, `you> $`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestLargerThanAMessage: `sessions show` and a resumed chat work on a
// session whose events do not fit in one response (200 MiB, past the
// server's 32 MiB and gRPC's 4 MiB default): they print the newest events
// that fit and say how many older ones were left out.
func TestLargerThanAMessage(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "big.db"), boltstore.Options{Logger: log, NoSync: true, MaxItemBytes: server.MaxItemBytes(server.DefaultMaxMessageBytes)})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apps.NewRegistry(apps.Config{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(demo.App()); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.NewGRPCServer(server.New(server.Config{Store: st, Apps: server.RunnerApps(reg), Logger: log}))
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		_ = st.Close()
	})
	addr := lis.Addr().String()
	k := store.SessionKey{App: "demo", User: "fay", Session: "big"}
	if _, err := st.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		ev := &agentrunnerv1.Event{Author: "greeter", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("part %d ", i+1) + strings.Repeat("z", 1<<20)}}}}}
		if _, err := st.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut syncBuffer
	if err := chat.Sessions(t.Context(), []string{"show", "--addr", addr, "--app", "demo", "--user", "fay", "--events", "0", "big"}, &out, &errOut); err != nil {
		t.Fatalf("sessions show on a 200 MiB session: %v (%s)", err, errOut.String())
	}
	shown := out.String()
	omitted := regexp.MustCompile(`\((\d+) older events left out`).FindStringSubmatch(shown)
	if omitted == nil || !strings.Contains(shown, fmt.Sprintf("#%d [greeter] part %d ", n, n)) {
		t.Fatalf("sessions show: no note of the events left out, or not the newest event:\n%.300s", shown)
	}
	if first := fmt.Sprintf("#%s [greeter]", omitted[1]); strings.Contains(shown, first+" ") {
		t.Fatalf("sessions show printed event %s, which it says it left out", omitted[1])
	}

	c := startChat(t, "--addr", addr, "--app", "demo", "--user", "fay", "--session", "big", "--history", "0", "--no-stream")
	c.expect(`resumed session big of app demo \(200 events\)\n\(\d+ older events left out`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestChatResumesAWaitingSession: a chat that resumes a session whose last
// run waits on the person asks for the answer first, and sends it.
func TestChatResumesAWaitingSession(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "orders", "--user", "di", "--session", "waits", "--no-stream")
	c.expect(`new session waits of app orders`)
	c.typeLine(`call get_order {"order_id": "7"}`)
	c.expect(`\? answer get_order\({"order_id":"7"}\) with a JSON object: $`)
	c.in.Close() // the person leaves without answering
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}

	c = startChat(t, "--addr", addr, "--app", "orders", "--user", "di", "--session", "waits", "--no-stream")
	c.expect(`resumed session waits of app orders`, `run e-\S+ waits on your answer to 1 call\(s\):\n\? answer get_order\({"order_id":"7"}\) with a JSON object: $`)
	c.typeLine(`{"status": "lost"}`)
	c.expect(`\[clerk\] offline model: get_order returned {"status":"lost"}\n  \(events #\d+-#\d+ · tokens \d+ · cost unknown\)\nyou> $`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestChatCommands: /help lists the commands; a line that starts with "/"
// and is no command gets the help and goes nowhere (no run, no event);
// "//" sends a message that starts with "/".
func TestChatCommands(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "slow", "--user", "ho", "--session", "cmds")
	c.expect(`you> $`)
	c.typeLine("/help")
	c.expect(`Commands:\n  /help .*\n  /session .*\n  /quit .*\n`, `Ctrl-C .*\n  Ctrl-D .*\nyou> $`)
	c.typeLine("/frobnicate the thing")
	c.expect(`you> unknown command /frobnicate; nothing was sent.\nCommands:\n(.*\n)+you> $`)
	c.typeLine("/sesion")
	c.expect(`unknown command /sesion; nothing was sent.\n`)
	if got := userMessages(t, addr, "slow", "ho", "cmds"); len(got) != 0 {
		t.Fatalf("unknown commands reached the agent: %q", got)
	}
	c.typeLine("//etc/hosts is gone")
	c.expect(`\[snail\] heard 18 characters\n`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	if got := userMessages(t, addr, "slow", "ho", "cmds"); !slices.Equal(got, []string{"/etc/hosts is gone"}) {
		t.Fatalf("stored messages %q, want only the one sent with //", got)
	}
}

// TestChatUnavailableApp: an app the server cannot run (its model has no
// API key) fails the chat when it starts, with the server's reason, before
// a session is made; the binary exits 1 for any error Main returns.
func TestChatUnavailableApp(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "unready", "--user", "un")
	err := c.wait()
	want := `FailedPrecondition: app "unready" cannot run on ` + addr + `: ` + unreadyReason
	if err == nil || err.Error() != want {
		t.Fatalf("chat --app unready: got error %v, want %q\noutput:\n%s", err, want, c.out)
	}
	if out := c.out.String(); out != "" {
		t.Errorf("the chat printed before failing:\n%s", out)
	}
	sessions, _ := clients(t, addr)
	list, err := sessions.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "unready"})
	if err != nil || len(list.GetSessions()) != 0 {
		t.Fatalf("sessions of app unready: %v, %v; want none", list.GetSessions(), err)
	}
}

// TestChatLongLinesFromAPipe: input that is not a terminal is read in
// lines of any length (a Scanner stopped at 1 MiB), and a trailing
// backslash goes on on the next line.
func TestChatLongLinesFromAPipe(t *testing.T) {
	addr, _ := startServer(t)
	c := startChat(t, "--addr", addr, "--app", "slow", "--user", "pi", "--session", "pipe")
	long := strings.Repeat("x", 3<<20)
	c.typeLine(long)
	c.expect(fmt.Sprintf(`\[snail\] heard %d characters\n`, len(long)))
	c.typeLine(`first \`)
	c.typeLine("second")
	c.expect(`\[snail\] heard 13 characters\n`)
	c.typeLine("/quit")
	if err := c.wait(); err != nil {
		t.Fatal(err)
	}
	if got := userMessages(t, addr, "slow", "pi", "pipe"); len(got) != 2 || got[0] != long || got[1] != "first \nsecond" {
		t.Fatalf("stored %d messages; want the long line whole and \"first \\nsecond\"", len(got))
	}
}
