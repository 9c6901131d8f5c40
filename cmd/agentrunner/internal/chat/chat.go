// Package chat is the terminal client for people: `agentrunner chat` to
// talk to an app, with answers streamed token by token under the name of the
// agent that gives them, and `agentrunner sessions` to inspect what is
// stored.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// ErrUsage marks a command line that cannot work as given; the binary
// exits with status 2 for it, as for its own usage errors.
var ErrUsage = errors.New("usage error")

// DefaultAddr is where the clients look for a server when neither --addr nor
// AGENTRUNNER_ADDR says otherwise.
const DefaultAddr = "127.0.0.1:50051"

func defaultAddr() string {
	if a := os.Getenv("AGENTRUNNER_ADDR"); a != "" {
		return a
	}
	return DefaultAddr
}

func defaultUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "user"
}

// printOmitted says that older events of a session did not fit in one
// response and were left out.
func printOmitted(out io.Writer, n uint64) {
	if n > 0 {
		fmt.Fprintf(out, "(%d older events left out: the session is larger than one message; ListEvents pages through all of them)\n", n)
	}
}

// describe turns an RPC error into one readable line.
func describe(err error) error {
	if st, ok := status.FromError(err); ok {
		if clientconn.IsTLSMismatch(err) {
			return errors.New(st.Message())
		}
		if st.Code() == codes.Unavailable {
			return fmt.Errorf("server unavailable (is `agentrunner serve` running?): %s", st.Message())
		}
		return fmt.Errorf("%s: %s", st.Code(), st.Message())
	}
	return err
}

// Main runs `agentrunner chat`; args are the arguments after "chat".
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentrunner chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultAddr(), "server address (env AGENTRUNNER_ADDR)")
	app := fs.String("app", "demo", "app to talk to (an app the server does not host, or cannot run, fails at once)")
	user := fs.String("user", defaultUser(), "user id (env USER)")
	session := fs.String("session", "", "session to resume; empty starts a new one")
	history := fs.Int("history", 10, "events of a resumed session to show")
	noStream := fs.Bool("no-stream", false, "wait for complete answers instead of streaming tokens")
	var cf clientconn.Flags
	cf.Register(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: agentrunner chat --app APP [--user U] [--session S]\n\n"+
			"Talk to an app in the terminal. Type a message and press Enter; /help lists the commands and keys,\n"+
			"/quit or Ctrl-D ends.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	rest, err := cliflags.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("chat takes no arguments, got %q (the session goes in --session): %w", rest, ErrUsage)
	}
	conn, err := cf.Dial(*addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := &chat{
		out: stdout, app: *app, user: *user, stream: !*noStream,
		sessions: servicev1.NewSessionServiceClient(conn),
		runner:   servicev1.NewRunnerServiceClient(conn),
	}
	if err := c.checkApp(ctx, *addr); err != nil {
		return describe(err)
	}
	in, restore := openInput(stdin, stdout)
	defer restore()
	c.in = in
	if _, ok := in.(*terminal); ok {
		// A chat ended by a signal must still leave raw mode (restore);
		// the terminal's reads, unlike a pipe's, give way to ctx.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGHUP)
		defer stop()
	}
	if err := c.open(ctx, *session, *history); err != nil {
		return describe(err)
	}
	if err := c.answerWaiting(ctx); err != nil {
		fmt.Fprintf(stdout, "! %v\n", describe(err))
	}
	return c.loop(ctx)
}

// loop reads the person's lines and runs each, until /quit or the end of
// input.
func (c *chat) loop(ctx context.Context) error {
	for {
		fmt.Fprint(c.out, "you> ")
		line, err := c.in.readLine(ctx)
		switch {
		case errors.Is(err, errInterrupt):
			continue // the line is dropped; the chat goes on
		case errors.Is(err, io.EOF):
			fmt.Fprintln(c.out)
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		msg, quit := c.command(strings.TrimSpace(line))
		if quit {
			return nil
		}
		if msg == "" {
			continue
		}
		if err := c.send(ctx, msg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintf(c.out, "! %v\n", describe(err))
		}
	}
}

type chat struct {
	out               io.Writer
	app, user         string
	session           string
	stream            bool
	sessions          servicev1.SessionServiceClient
	runner            servicev1.RunnerServiceClient
	speaking, partial string // agent whose partial text is being printed
	in                input  // the person's lines, for answering calls too
}

// checkApp fails with NotFound, naming the apps there are, when the server
// does not host c.app: sessions of any app name can be stored, so without
// this check a typo would only show at the first message. It fails with
// FailedPrecondition when the app cannot run (a model without its API
// key), for the same reason.
func (c *chat) checkApp(ctx context.Context, addr string) error {
	resp, err := c.runner.ListApps(ctx, &servicev1.ListAppsRequest{})
	if err != nil {
		return err
	}
	var names []string
	for _, a := range resp.GetApps() {
		if a.GetName() == c.app && a.GetUnavailableReason() != "" {
			// Said now, not as the failure of the first message.
			return status.Errorf(codes.FailedPrecondition, "app %q cannot run on %s: %s", c.app, addr, a.GetUnavailableReason())
		}
		if a.GetName() == c.app {
			return nil
		}
		names = append(names, a.GetName())
	}
	return status.Errorf(codes.NotFound, "app %q is not served by %s; it serves: %s", c.app, addr, strings.Join(names, ", "))
}

// open resumes the session id, or creates it (a new random one when id is
// empty), and prints where the user is.
func (c *chat) open(ctx context.Context, id string, history int) error {
	if id != "" {
		got, err := c.sessions.GetSession(ctx, &servicev1.GetSessionRequest{
			AppName: c.app, UserId: c.user, SessionId: id, NumRecentEvents: int32(history),
		})
		if err == nil {
			c.session = id
			fmt.Fprintf(c.out, "resumed session %s of app %s (%d events)\n", id, c.app, got.GetSession().GetLastSequence())
			printOmitted(c.out, got.GetOmittedEvents())
			for _, ev := range got.GetEvents() {
				fmt.Fprintf(c.out, "#%d ", ev.GetSequence())
				c.printComplete(ev, false)
			}
			return nil
		}
		if status.Code(err) != codes.NotFound {
			return err
		}
	}
	created, err := c.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: c.app, UserId: c.user, SessionId: id})
	if err != nil {
		return err
	}
	c.session = created.GetSession().GetSessionId()
	fmt.Fprintf(c.out, "new session %s of app %s (resume with --session %s)\n", c.session, c.app, c.session)
	return nil
}

// maxAnswerRounds bounds how many times one message may wait on the
// person (a model could call tools forever).
const maxAnswerRounds = 10

// send runs a message; when the run ends waiting on calls (a tool the
// client executes, a confirmation), it asks the person to answer them and
// sends the answers, until a run waits on nothing.
func (c *chat) send(ctx context.Context, text string) error {
	return c.sendContent(ctx, &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}})
}

// sendContent runs msg as send does.
func (c *chat) sendContent(ctx context.Context, msg *agentrunnerv1.Content) error {
	for range maxAnswerRounds {
		waiting, err := c.run(ctx, msg)
		if err != nil || len(waiting) == 0 {
			return err
		}
		if msg = c.answer(ctx, waiting); msg == nil {
			return nil // the person gave up (end of input)
		}
	}
	return nil
}

// run streams one run and returns the calls it ends waiting on.
func (c *chat) run(ctx context.Context, msg *agentrunnerv1.Content) ([]*agentrunnerv1.FunctionCall, error) {
	mode := agentrunnerv1.StreamingMode_STREAMING_MODE_NONE
	if c.stream {
		mode = agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
	}
	runCtx, cancelStream := context.WithCancel(ctx)
	defer cancelStream()
	stream, err := c.runner.Run(runCtx, &servicev1.RunRequest{
		AppName: c.app, UserId: c.user, SessionId: c.session, NewMessage: msg,
		// The user's event too, for its sequence number; its text is
		// already on the screen.
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: mode, StreamUserEvent: true},
	})
	if err != nil {
		return nil, err
	}
	stopper := c.stopOnInterrupt(ctx, cancelStream)
	defer stopper.stop()
	var first, last uint64
	var record *agentrunnerv1.Run // the last run record seen
	defer func() {
		c.endPartial()
		if first > 0 {
			fmt.Fprintf(c.out, "  (events #%d-#%d%s)\n", first, last, spendOf(record))
		}
	}()
	var waiting []*agentrunnerv1.FunctionCall
	cancelled := false
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return waiting, nil
		}
		if cancelled && status.Code(err) == codes.Canceled {
			return nil, nil // what the last record said; the chat goes on
		}
		if err != nil {
			return nil, err
		}
		if r := resp.GetRun(); r != nil { // the run record, first and last
			record = r
			stopper.started(r.GetRunId())
			if cancelled = r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED; cancelled {
				c.endPartial()
				fmt.Fprintln(c.out, "  (run cancelled)")
			}
			continue
		}
		if e := resp.GetError(); e != nil {
			c.endPartial()
			fmt.Fprintf(c.out, "! error from agent: %s: %s\n", codes.Code(e.GetCode()), e.GetMessage())
			continue
		}
		ev := resp.GetEvent()
		if ev.GetPartial() {
			c.printPartial(ev)
			continue
		}
		if seq := ev.GetSequence(); seq > 0 {
			if first == 0 {
				first = seq
			}
			last = seq
		}
		if ev.GetAuthor() == "user" {
			continue
		}
		c.printComplete(ev, c.partial != "" && c.speaking == ev.GetAuthor())
		waiting = append(waiting, waitedOn(ev)...)
	}
}

// spendOf is what a run's model calls used and cost, for the line that
// ends the run: " · tokens 1,234 · cost 0.0123 USD", or "" when it made
// none (or its last record never came).
func spendOf(r *agentrunnerv1.Run) string {
	if s := spendfmt.Summary(r.GetUsage(), r.GetCost()); s != "" {
		return " · " + s
	}
	return ""
}

// runStopper cancels a run on the server (CancelRun) when the person
// presses Ctrl-C or Esc while its answer streams; the chat goes on.
type runStopper struct {
	interrupted chan struct{} // capacity 1: one press is enough
	runID       chan string   // capacity 1: the run's id, once known
	done        chan struct{} // closed when the run's stream is over
	stopWatch   func()
}

// stopOnInterrupt watches the keys until stop is called. The run's id
// comes with the stream's first message, which a quick Ctrl-C may
// precede: the goroutine waits for both.
func (c *chat) stopOnInterrupt(ctx context.Context, cancelStream func()) *runStopper {
	s := &runStopper{interrupted: make(chan struct{}, 1), runID: make(chan string, 1), done: make(chan struct{})}
	s.stopWatch = c.in.watch(func() {
		select {
		case s.interrupted <- struct{}{}:
		default:
		}
	})
	go func() {
		var id string
		select {
		case <-s.interrupted:
		case <-s.done:
			return
		}
		select {
		case id = <-s.runID:
		case <-s.done:
			return
		}
		if _, err := c.runner.CancelRun(ctx, &servicev1.CancelRunRequest{RunId: id}); err != nil {
			// Going away cancels the run too (ON_DISCONNECT_CANCEL),
			// though without the server's word that it has ended.
			cancelStream()
		}
	}()
	return s
}

func (s *runStopper) started(runID string) {
	select {
	case s.runID <- runID:
	default:
	}
}

func (s *runStopper) stop() {
	close(s.done)
	s.stopWatch()
}

// answerWaiting asks the person for the answers a resumed session's last
// run waits on (a tool the client executes, a confirmation), and sends
// them, as it does when a run it sent ends waiting.
func (c *chat) answerWaiting(ctx context.Context) error {
	runs, err := c.runner.ListRuns(ctx, &servicev1.ListRunsRequest{AppName: c.app, UserId: c.user, SessionId: c.session, PageSize: 1})
	if err != nil || len(runs.GetRuns()) == 0 {
		return err
	}
	run := runs.GetRuns()[0]
	if run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		return nil
	}
	events, err := c.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{
		AppName: c.app, UserId: c.user, SessionId: c.session, AfterSequence: run.GetFirstSequence() - 1, PageSize: 1000,
	})
	if err != nil {
		return err
	}
	var calls []*agentrunnerv1.FunctionCall
	for _, ev := range events.GetEvents() {
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc != nil && slices.Contains(run.GetPendingCallIds(), fc.GetId()) {
				calls = append(calls, fc)
			}
		}
	}
	if len(calls) == 0 {
		return nil
	}
	fmt.Fprintf(c.out, "run %s waits on your answer to %d call(s):\n", run.GetRunId(), len(calls))
	if msg := c.answer(ctx, calls); msg != nil {
		return c.sendContent(ctx, msg)
	}
	return nil
}

// waitedOn returns the calls of ev the run waits on.
func waitedOn(ev *agentrunnerv1.Event) []*agentrunnerv1.FunctionCall {
	var out []*agentrunnerv1.FunctionCall
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc != nil && slices.Contains(ev.GetLongRunningToolIds(), fc.GetId()) {
			out = append(out, fc)
		}
	}
	return out
}

// answer asks the person to answer each call and returns the message that
// carries the answers, or nil at the end of input: y or n for a
// confirmation, a JSON object for any other call.
func (c *chat) answer(ctx context.Context, calls []*agentrunnerv1.FunctionCall) *agentrunnerv1.Content {
	msg := &agentrunnerv1.Content{Role: "user"}
	for _, fc := range calls {
		resp := c.ask(ctx, fc)
		if resp == nil {
			return nil
		}
		msg.Parts = append(msg.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
			Id: fc.GetId(), Name: fc.GetName(), Response: resp,
		}}})
	}
	return msg
}

// ask prompts for one call's answer until it is a valid one; nil at the
// end of input.
func (c *chat) ask(ctx context.Context, fc *agentrunnerv1.FunctionCall) *structpb.Struct {
	confirm := fc.GetName() == confirmationTool
	for c.in != nil {
		if confirm {
			f := fc.GetArgs().GetFields()
			fmt.Fprintf(c.out, "? confirm %s(%s) [y/n] ", f["name"].GetStringValue(), Compact(f["args"].GetStructValue()))
		} else {
			fmt.Fprintf(c.out, "? answer %s(%s) with a JSON object: ", fc.GetName(), Compact(fc.GetArgs()))
		}
		line, err := c.in.readLine(ctx)
		if errors.Is(err, errInterrupt) {
			continue // Ctrl-C clears the line; the question is asked again
		}
		if err != nil {
			fmt.Fprintln(c.out)
			return nil
		}
		line = strings.TrimSpace(line)
		if confirm && (line == "y" || line == "n" || line == "yes" || line == "no") {
			return &structpb.Struct{Fields: map[string]*structpb.Value{"confirmed": structpb.NewBoolValue(line[0] == 'y')}}
		}
		var obj map[string]any
		if !confirm && json.Unmarshal([]byte(line), &obj) == nil && obj != nil {
			if s, err := structpb.NewStruct(obj); err == nil {
				return s
			}
		}
		fmt.Fprintln(c.out, "  (not an answer; try again)")
	}
	return nil
}

// confirmationTool is the reserved function an agent calls to ask for a
// confirmation (builtin.RequestConfirmationName; the chat is a client and
// keeps to the wire).
const confirmationTool = "request_confirmation"

// printPartial prints streamed text as it arrives, under the agent's name.
func (c *chat) printPartial(ev *agentrunnerv1.Event) {
	t := text(ev, false)
	if t == "" {
		return
	}
	if c.speaking != ev.GetAuthor() {
		c.endPartial()
		fmt.Fprintf(c.out, "[%s] ", ev.GetAuthor())
		c.speaking = ev.GetAuthor()
	}
	fmt.Fprint(c.out, t)
	c.partial += t
}

func (c *chat) endPartial() {
	if c.speaking != "" {
		fmt.Fprintln(c.out)
	}
	c.speaking, c.partial = "", ""
}

// printComplete prints a complete event compactly; when its text was just
// streamed, only what the stream did not show (tool calls, transfers).
func (c *chat) printComplete(ev *agentrunnerv1.Event, streamed bool) {
	author := ev.GetAuthor()
	if !streamed {
		c.endPartial()
		if author == "user" {
			if t := text(ev, false); t != "" {
				fmt.Fprintf(c.out, "you> %s\n", t)
			}
		} else if t := text(ev, false); t != "" {
			fmt.Fprintf(c.out, "[%s] %s\n", author, t)
		}
	} else {
		c.endPartial()
	}
	for _, p := range ev.GetContent().GetParts() {
		switch {
		case p.GetFunctionCall() != nil:
			fc := p.GetFunctionCall()
			fmt.Fprintf(c.out, "  -> %s calls %s(%s)\n", author, fc.GetName(), Compact(fc.GetArgs()))
		case p.GetFunctionResponse() != nil:
			fr := p.GetFunctionResponse()
			fmt.Fprintf(c.out, "  <- %s returned %s\n", fr.GetName(), Compact(fr.GetResponse()))
		}
	}
	if t := ev.GetActions().GetTransferToAgent(); t != "" {
		fmt.Fprintf(c.out, "  => %s transfers to %s\n", author, t)
	}
	if ev.GetActions().GetEscalate() {
		fmt.Fprintf(c.out, "  => %s escalates\n", author)
	}
	if cp := ev.GetActions().GetCompaction(); cp != nil {
		fmt.Fprintf(c.out, "  (events #%d-#%d compacted: agents now read a summary of them)\n", cp.GetStartSequence(), cp.GetEndSequence())
	}
	if ev.GetErrorCode() != "" || ev.GetErrorMessage() != "" {
		fmt.Fprintf(c.out, "! %s: %s %s\n", author, ev.GetErrorCode(), ev.GetErrorMessage())
	}
}

func text(ev *agentrunnerv1.Event, thoughts bool) string {
	var b strings.Builder
	for _, p := range ev.GetContent().GetParts() {
		if p.GetThought() == thoughts {
			b.WriteString(p.GetText())
		}
	}
	return b.String()
}

// Compact renders a Struct as one line of JSON, cut at 120 bytes; nil is
// empty. `agentrunner runs` prints with it too.
func Compact(s *structpb.Struct) string {
	if s == nil {
		return ""
	}
	b, err := protojson.Marshal(s)
	if err != nil {
		return "?"
	}
	var v any
	if json.Unmarshal(b, &v) == nil {
		b, _ = json.Marshal(v) // protojson's spacing is deliberately unstable
	}
	out := string(b)
	if len(out) > 120 {
		out = out[:117] + "..."
	}
	return out
}

// Sessions runs `agentrunner sessions list|show|delete`.
func Sessions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentrunner sessions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", defaultAddr(), "server address (env AGENTRUNNER_ADDR)")
	app := fs.String("app", "demo", "app of the sessions")
	user := fs.String("user", defaultUser(), "user id, default env USER (list: empty lists every user)")
	events := fs.Int("events", 20, "show: most recent events to print (0 for all)")
	ff := registerForkFlags(fs)
	var cf clientconn.Flags
	cf.Register(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  agentrunner sessions list   [--app APP] [--user U]\n"+
			"  agentrunner sessions show   [--app APP] [--user U] [--events N] SESSION\n"+
			"  agentrunner sessions delete [--app APP] [--user U] SESSION\n"+forkUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return fmt.Errorf("sessions: missing command (list, show, delete, fork or rewind): %w", ErrUsage)
	}
	cmd := args[0]
	switch cmd {
	case "list", "show", "delete", "fork", "rewind":
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return flag.ErrHelp
	default:
		fs.Usage()
		return fmt.Errorf("sessions: unknown command %q (want list, show, delete, fork or rewind): %w", cmd, ErrUsage)
	}
	positional, err := cliflags.Parse(fs, args[1:])
	if err != nil {
		return err
	}
	conn, err := cf.Dial(*addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	sc := servicev1.NewSessionServiceClient(conn)
	needID := func() (string, error) {
		if len(positional) != 1 {
			return "", fmt.Errorf("sessions %s: want one SESSION argument: %w", cmd, ErrUsage)
		}
		return positional[0], nil
	}
	switch cmd {
	case "list":
		return listSessions(ctx, sc, stdout, *app, *user)
	case "show":
		id, err := needID()
		if err != nil {
			return err
		}
		return showSession(ctx, sc, stdout, &servicev1.GetSessionRequest{AppName: *app, UserId: *user, SessionId: id, NumRecentEvents: int32(*events)})
	case "delete":
		id, err := needID()
		if err != nil {
			return err
		}
		if _, err := sc.DeleteSession(ctx, &servicev1.DeleteSessionRequest{AppName: *app, UserId: *user, SessionId: id}); err != nil {
			return describe(err)
		}
		fmt.Fprintf(stdout, "deleted session %s\n", id)
		return nil
	case "fork", "rewind":
		id, err := needID()
		if err != nil {
			return err
		}
		if cmd == "fork" {
			return forkSession(ctx, sc, stdout, *app, *user, id, ff)
		}
		return rewindSession(ctx, sc, stdout, *app, *user, id, ff)
	}
	return fmt.Errorf("sessions: unknown command %q", cmd) // checked above
}

// listSessions prints the sessions of app (and user, unless empty), page
// by page.
func listSessions(ctx context.Context, sc servicev1.SessionServiceClient, stdout io.Writer, app, user string) error {
	token := ""
	fmt.Fprintf(stdout, "%-20s %-36s %7s  %s\n", "USER", "SESSION", "EVENTS", "UPDATED")
	for {
		resp, err := sc.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: app, UserId: user, PageToken: token, PageSize: 1000})
		if err != nil {
			return describe(err)
		}
		for _, s := range resp.GetSessions() {
			fmt.Fprintf(stdout, "%-20s %-36s %7d  %s\n", s.GetUserId(), s.GetSessionId(), s.GetLastSequence(), s.GetUpdateTime().AsTime().Local().Format(time.DateTime))
		}
		if token = resp.GetNextPageToken(); token == "" {
			return nil
		}
	}
}

// showSession prints a session, its most recent events, and the tool
// calls of its ledger that were started and never answered.
func showSession(ctx context.Context, sc servicev1.SessionServiceClient, stdout io.Writer, req *servicev1.GetSessionRequest) error {
	got, err := sc.GetSession(ctx, req)
	if err != nil {
		return describe(err)
	}
	s := got.GetSession()
	fmt.Fprintf(stdout, "session %s  app %s  user %s  events %d  updated %s\n", s.GetSessionId(), s.GetAppName(), s.GetUserId(),
		s.GetLastSequence(), s.GetUpdateTime().AsTime().Local().Format(time.DateTime))
	fmt.Fprintf(stdout, "state %s\n", Compact(s.GetState()))
	if ff := s.GetForkedFrom(); ff != nil {
		fmt.Fprintf(stdout, "forked from session %s (user %s) at event %d\n", ff.GetSessionId(), ff.GetUserId(), ff.GetSequence())
	}
	printOmitted(stdout, got.GetOmittedEvents())
	c := &chat{out: stdout}
	for _, ev := range got.GetEvents() {
		fmt.Fprintf(stdout, "#%d ", ev.GetSequence())
		if inv := ev.GetActions().GetRewindBeforeInvocationId(); inv != "" {
			fmt.Fprintf(stdout, "[%s] rewound to before run %s (state %s)\n", ev.GetAuthor(), inv, Compact(ev.GetActions().GetStateDelta()))
			continue
		}
		c.printComplete(ev, false)
		if text(ev, false) == "" && len(ev.GetContent().GetParts()) == 0 {
			fmt.Fprintf(stdout, "[%s] (state %s)\n", ev.GetAuthor(), Compact(ev.GetActions().GetStateDelta()))
		}
	}
	ledger, err := sc.ListToolCalls(ctx, &servicev1.ListToolCallsRequest{AppName: req.GetAppName(), UserId: req.GetUserId(), SessionId: req.GetSessionId()})
	if err != nil {
		return describe(err)
	}
	for _, tc := range ledger.GetToolCalls() {
		if tc.GetResponseSequence() == 0 {
			fmt.Fprintf(stdout, "open call #%d %s %s (started, not answered)\n", tc.GetCallSequence(), tc.GetTool(), tc.GetCallId())
		}
	}
	return nil
}
