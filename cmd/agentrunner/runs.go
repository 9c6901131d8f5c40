package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/chat"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

const runsUsage = `Usage:
  agentrunner runs list   --session S [--app APP] [--user U] [--page-size N [--page-token T]] [--json]
  agentrunner runs get    RUN_ID [--json]
  agentrunner runs cancel RUN_ID [--json]
  agentrunner runs attach RUN_ID [--after N]
  agentrunner runs resume RUN_ID [--answer CALL_ID=JSON ...] [--retry CALL_ID ...] [--keep-running]

Inspect and drive the runs of a server: list a session's runs (newest
first), show one, cancel it, follow it (attach: stored events, then live
ones), or continue an interrupted run or one that waits on calls (resume).

attach and resume exit with 1 when the run ends FAILED, CANCELLED or
INTERRUPTED, and with 0 when it ends SUCCEEDED or INPUT_REQUIRED (waiting
on the calls it names, which resume --answer or --retry settles).

Flags:
`

// runsFlags are the settings of `agentrunner runs`.
type runsFlags struct {
	addr, app, user, session string
	pageSize                 int
	pageToken                string
	json                     bool
	after                    uint64
	answers                  []answerFlag
	retry                    []string
	keepRunning              bool
	conn                     clientconn.Flags
}

// answerFlag is one --answer CALL_ID=JSON.
type answerFlag struct {
	callID   string
	response *structpb.Struct
}

// runsCommand runs `agentrunner runs list|get|cancel|attach|resume`; args
// are the arguments after "runs".
func runsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, runsUsage)
		return usagef("runs: missing command (list, get, cancel, attach or resume)")
	}
	cmd := args[0]
	switch cmd {
	case "list", "get", "cancel", "attach", "resume":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, runsUsage)
		newRunsFlagSet(&runsFlags{}, stderr).PrintDefaults()
		return flag.ErrHelp
	default:
		fmt.Fprint(stderr, runsUsage)
		return usagef("runs: unknown command %q (want list, get, cancel, attach or resume)", cmd)
	}
	f, id, err := parseRunsFlags(cmd, args[1:], stderr)
	if err != nil {
		return err
	}
	conn, err := f.conn.Dial(f.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	rc := runsClient{
		runner: servicev1.NewRunnerServiceClient(conn), sessions: servicev1.NewSessionServiceClient(conn),
		out: stdout, stderr: stderr, f: f,
	}
	switch cmd {
	case "list":
		return rc.list(ctx)
	case "get":
		resp, err := rc.runner.GetRun(ctx, &servicev1.GetRunRequest{RunId: id})
		if err != nil {
			return describeRPC(err)
		}
		return rc.printRecord(resp.GetRun())
	case "cancel":
		return rc.cancel(ctx, id)
	case "attach":
		stream, err := rc.runner.AttachRun(ctx, &servicev1.AttachRunRequest{RunId: id, AfterSequence: f.after})
		if err != nil {
			return describeRPC(err)
		}
		return rc.follow(ctx, stream)
	default:
		return rc.resume(ctx, id)
	}
}

// newRunsFlagSet declares every flag of `runs`; each subcommand checks
// that it got only those that mean something to it.
func newRunsFlagSet(f *runsFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentrunner runs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runsUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", clientAddr(), "server address (env "+envAddr+")")
	f.conn.Register(fs)
	fs.StringVar(&f.app, "app", "demo", "list: app of the session")
	fs.StringVar(&f.user, "user", clientUser(), "list: user of the session (env USER)")
	fs.StringVar(&f.session, "session", "", "list: the session whose runs to list (required)")
	fs.IntVar(&f.pageSize, "page-size", 0, "list: print one page of at most `N` runs and the token of the next; 0 lists them all")
	fs.StringVar(&f.pageToken, "page-token", "", "list: continue a listing from the token a previous page printed")
	fs.BoolVar(&f.json, "json", false, "list, get, cancel: print records as protojson (list: one per line)")
	fs.Uint64Var(&f.after, "after", 0, "attach: replay only stored events with a sequence greater than `N`")
	fs.Func("answer", "resume: answer a call the run waits on: `CALL_ID=JSON`, JSON an object, the call's result (repeatable)", func(s string) error {
		a, err := parseAnswer(s)
		f.answers = append(f.answers, a)
		return err
	})
	fs.Func("retry", "resume: run again a call that a crash left in doubt, by `CALL_ID` (repeatable)", func(s string) error {
		f.retry = append(f.retry, s)
		return nil
	})
	fs.BoolVar(&f.keepRunning, "keep-running", false, "resume: let the run go on when this command stops (by default stopping it cancels the run)")
	return fs
}

// connFlags are the connection flags every subcommand takes.
var connFlags = []string{"addr", "token-file", "ca-file", "cert-file", "key-file", "tls"}

// subcommandFlags are the flags each subcommand takes besides connFlags.
var subcommandFlags = map[string][]string{
	"list":   {"app", "user", "session", "page-size", "page-token", "json"},
	"get":    {"json"},
	"cancel": {"json"},
	"attach": {"after"},
	"resume": {"answer", "retry", "keep-running"},
}

// parseRunsFlags parses a subcommand's flags, which may come before or
// after its RUN_ID (`runs resume RUN_ID --answer ...` reads naturally).
func parseRunsFlags(cmd string, args []string, stderr io.Writer) (*runsFlags, string, error) {
	f := &runsFlags{}
	fs := newRunsFlagSet(f, stderr)
	positional, err := cliflags.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, "", err
		}
		return nil, "", usagef("runs %s: %v", cmd, err)
	}
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		if !slices.Contains(connFlags, fl.Name) && !slices.Contains(subcommandFlags[cmd], fl.Name) {
			bad = append(bad, "--"+fl.Name)
		}
	})
	switch {
	case len(bad) > 0:
		return nil, "", usagef("runs %s does not take %s", cmd, strings.Join(bad, ", "))
	case cmd == "list" && len(positional) > 0:
		return nil, "", usagef("runs list takes no arguments, got %q (the session goes in --session)", positional)
	case cmd == "list" && f.session == "":
		return nil, "", usagef("runs list: --session is required")
	case cmd == "list" && f.pageToken != "" && f.pageSize == 0:
		return nil, "", usagef("runs list: --page-token goes with --page-size")
	case cmd != "list" && len(positional) != 1:
		return nil, "", usagef("runs %s: want one RUN_ID argument, got %d", cmd, len(positional))
	}
	if cmd == "list" {
		return f, "", nil
	}
	return f, positional[0], nil
}

// parseAnswer parses CALL_ID=JSON; JSON must be an object, the shape of a
// function response.
func parseAnswer(s string) (answerFlag, error) {
	id, js, ok := strings.Cut(s, "=")
	if !ok || id == "" {
		return answerFlag{}, fmt.Errorf("want CALL_ID=JSON, got %q", s)
	}
	resp := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(js), resp); err != nil {
		return answerFlag{}, fmt.Errorf("the answer to %s must be a JSON object: %v", id, err)
	}
	return answerFlag{callID: id, response: resp}, nil
}

// clientAddr is where the client commands look for the server: the same
// variable serve listens on, so one export serves both.
func clientAddr() string {
	if a := os.Getenv(envAddr); a != "" {
		return a
	}
	return defaultAddr
}

func clientUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "user"
}

// describeRPC turns an RPC error into one readable line, as the sessions
// command does.
func describeRPC(err error) error {
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

// runsClient is one `runs` command's connection and output.
type runsClient struct {
	runner      servicev1.RunnerServiceClient
	sessions    servicev1.SessionServiceClient
	out, stderr io.Writer
	f           *runsFlags
}

// list prints the session's runs, newest first: every page, or with
// --page-size the one page asked for and how to get the next.
func (rc runsClient) list(ctx context.Context) error {
	if !rc.f.json {
		fmt.Fprintf(rc.out, "%-28s  %-14s  %-19s  %-11s  %9s  %-16s  %-16s  %s\n", "RUN", "STATUS", "CREATED", "EVENTS", "TOKENS", "COST", "REQUEST", "WAITING ON")
	}
	token, size := rc.f.pageToken, rc.f.pageSize
	if size == 0 {
		size = 1000 // the largest page the server gives, for the fewest calls
	}
	for {
		resp, err := rc.runner.ListRuns(ctx, &servicev1.ListRunsRequest{
			AppName: rc.f.app, UserId: rc.f.user, SessionId: rc.f.session, PageSize: int32(size), PageToken: token,
		})
		if err != nil {
			return describeRPC(err)
		}
		for _, r := range resp.GetRuns() {
			if rc.f.json {
				b, err := protojson.Marshal(r)
				if err != nil {
					return err
				}
				fmt.Fprintf(rc.out, "%s\n", b)
				continue
			}
			row := fmt.Sprintf("%-28s  %-14s  %-19s  %-11s  %9s  %-16s  %-16s  %s", r.GetRunId(), shortStatus(r.GetStatus()),
				localTime(r.GetCreateTime()), orDash(seqRange(r)), runTokens(r), spendfmt.Short(r.GetCost()),
				orDash(r.GetRequestId()), strings.Join(r.GetPendingCallIds(), ","))
			fmt.Fprintln(rc.out, strings.TrimRight(row, " "))
		}
		token = resp.GetNextPageToken()
		switch {
		case token == "":
			return nil
		case rc.f.pageSize > 0:
			// stderr: the table on stdout stays a table.
			fmt.Fprintf(rc.stderr, "more runs: add --page-token %s\n", token)
			return nil
		}
	}
}

// printRecord prints a run record as `key: value` lines, or as protojson
// with --json.
func (rc runsClient) printRecord(r *agentrunnerv1.Run) error {
	if rc.f.json {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Fprintf(rc.out, "%s\n", b)
		return nil
	}
	line := func(key, value string) {
		if value != "" {
			fmt.Fprintf(rc.out, "%-15s %s\n", key+":", value)
		}
	}
	line("run", r.GetRunId())
	line("session", fmt.Sprintf("%s/%s/%s", r.GetAppName(), r.GetUserId(), r.GetSessionId()))
	line("status", shortStatus(r.GetStatus()))
	line("created", localTime(r.GetCreateTime()))
	line("started", localTime(r.GetStartTime()))
	line("ended", localTime(r.GetEndTime()))
	line("events", seqRange(r))
	line("request id", r.GetRequestId())
	if s := r.GetMultitaskStrategy(); s != agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_UNSPECIFIED {
		line("multitask", strings.TrimPrefix(s.String(), "MULTITASK_STRATEGY_"))
	}
	if d := r.GetOnDisconnect(); d != agentrunnerv1.OnDisconnect_ON_DISCONNECT_UNSPECIFIED {
		line("on disconnect", strings.TrimPrefix(d.String(), "ON_DISCONNECT_"))
	}
	line("waiting on", strings.Join(r.GetPendingCallIds(), ", "))
	if e := r.GetError(); e != nil {
		line("error", fmt.Sprintf("%s: %s", codes.Code(e.GetCode()), e.GetMessage()))
	}
	if u := r.GetUsage(); u != nil {
		line("tokens", fmt.Sprintf("%s in, %s out, %s total", spendfmt.Count(int64(u.GetPromptTokenCount())),
			spendfmt.Count(int64(u.GetCandidatesTokenCount())), spendfmt.Count(int64(u.GetTotalTokenCount()))))
	}
	line("cost", spendfmt.Cost(r.GetCost()))
	return nil
}

// runTokens is a run's total tokens for a table: "-" when no model call
// reported usage.
func runTokens(r *agentrunnerv1.Run) string {
	if r.GetUsage() == nil {
		return "-"
	}
	return spendfmt.Count(int64(r.GetUsage().GetTotalTokenCount()))
}

// cancel cancels a run and prints its status once that took effect. A run
// that had already ended is not an error: CancelRun returns it as it is.
func (rc runsClient) cancel(ctx context.Context, id string) error {
	resp, err := rc.runner.CancelRun(ctx, &servicev1.CancelRunRequest{RunId: id})
	if err != nil {
		return describeRPC(err)
	}
	if rc.f.json {
		return rc.printRecord(resp.GetRun())
	}
	r := resp.GetRun()
	fmt.Fprintf(rc.out, "run %s %s\n", r.GetRunId(), shortStatus(r.GetStatus()))
	if r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		fmt.Fprintln(rc.out, "  (it had already ended; nothing was cancelled)")
	}
	return nil
}

// resume continues a run, answering the calls it waits on or retrying
// those a crash left in doubt, and follows it as attach does.
func (rc runsClient) resume(ctx context.Context, id string) error {
	req := &servicev1.ResumeRunRequest{RunId: id, RetryCallIds: rc.f.retry}
	if rc.f.keepRunning {
		req.OnDisconnect = agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE
	}
	if len(rc.f.answers) > 0 {
		got, err := rc.runner.GetRun(ctx, &servicev1.GetRunRequest{RunId: id})
		if err != nil {
			return describeRPC(err)
		}
		calls, err := rc.ledger(ctx, got.GetRun())
		if err != nil {
			return describeRPC(err)
		}
		req.Answers = &agentrunnerv1.Content{Role: "user"}
		for _, a := range rc.f.answers {
			// The model reads a response by its name, so it is the called
			// tool's; an id the ledger does not know keeps an empty name
			// and the server says what is wrong with it.
			req.Answers.Parts = append(req.Answers.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{
				FunctionResponse: &agentrunnerv1.FunctionResponse{Id: a.callID, Name: calls[a.callID].GetTool(), Response: a.response},
			}})
		}
	}
	stream, err := rc.runner.ResumeRun(ctx, req)
	if err != nil {
		return describeRPC(err)
	}
	return rc.follow(ctx, stream)
}

// ledger returns the tool calls of a run's session by call id.
func (rc runsClient) ledger(ctx context.Context, r *agentrunnerv1.Run) (map[string]*agentrunnerv1.ToolCall, error) {
	resp, err := rc.sessions.ListToolCalls(ctx, &servicev1.ListToolCallsRequest{AppName: r.GetAppName(), UserId: r.GetUserId(), SessionId: r.GetSessionId()})
	if err != nil {
		return nil, err
	}
	calls := map[string]*agentrunnerv1.ToolCall{}
	for _, c := range resp.GetToolCalls() {
		calls[c.GetCallId()] = c
	}
	return calls, nil
}

// follow prints a run stream (AttachRun, ResumeRun) as it arrives and
// returns the error its final status calls for.
func (rc runsClient) follow(ctx context.Context, stream grpc.ServerStreamingClient[servicev1.RunResponse]) error {
	p := &eventPrinter{out: rc.out}
	var first, last *agentrunnerv1.Run
	var streamErr error
	for {
		resp, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				streamErr = err
			}
			break
		}
		switch {
		case resp.GetRun() != nil && first == nil:
			first = resp.GetRun()
			fmt.Fprintf(rc.out, "run %s of %s/%s/%s: %s\n", first.GetRunId(), first.GetAppName(), first.GetUserId(), first.GetSessionId(), shortStatus(first.GetStatus()))
		case resp.GetRun() != nil:
			last = resp.GetRun()
		case resp.GetError() != nil:
			p.endPartial()
			fmt.Fprintf(rc.out, "! error from agent: %s: %s\n", codes.Code(resp.GetError().GetCode()), resp.GetError().GetMessage())
		case resp.GetEvent().GetPartial():
			p.partial(resp.GetEvent())
		default:
			p.complete(resp.GetEvent())
		}
	}
	p.endPartial()
	if last == nil {
		// The stream ended before the run did (or before it began).
		return describeRPC(orErr(streamErr, errors.New("the stream ended before the run's final record")))
	}
	return rc.finalLine(ctx, last, streamErr)
}

// finalLine prints the run's final status and turns it into the command's
// outcome: an error (exit 1) for a run that did not end well. After the
// final record the stream may end with the run's own error, which the
// record already explains.
func (rc runsClient) finalLine(ctx context.Context, r *agentrunnerv1.Run, streamErr error) error {
	fmt.Fprintf(rc.out, "run %s %s", r.GetRunId(), shortStatus(r.GetStatus()))
	if rng := seqRange(r); rng != "" {
		fmt.Fprintf(rc.out, " (events %s)", rng)
	}
	fmt.Fprintln(rc.out)
	if spend := spendfmt.Summary(r.GetUsage(), r.GetCost()); spend != "" {
		fmt.Fprintf(rc.out, "  %s\n", spend)
	}
	rc.printWaiting(ctx, r)
	switch r.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
		if streamErr != nil {
			return describeRPC(streamErr)
		}
		return nil
	case agentrunnerv1.RunStatus_RUN_STATUS_FAILED, agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED, agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		e := r.GetError()
		return fmt.Errorf("run %s ended %s: %s: %s", r.GetRunId(), shortStatus(r.GetStatus()), codes.Code(e.GetCode()), e.GetMessage())
	}
	// PENDING or RUNNING as the last record: the stream was cut short.
	return describeRPC(orErr(streamErr, fmt.Errorf("run %s is still %s", r.GetRunId(), shortStatus(r.GetStatus()))))
}

// printWaiting prints, for each call the run waits on, what it is and how
// to settle it. The names come from the session's ledger, since a resumed
// or --after stream may not carry the calls; without it, the ids alone.
func (rc runsClient) printWaiting(ctx context.Context, r *agentrunnerv1.Run) {
	if len(r.GetPendingCallIds()) == 0 {
		return
	}
	calls, err := rc.ledger(ctx, r)
	if err != nil {
		calls = nil
	}
	inDoubt := false
	for _, id := range r.GetPendingCallIds() {
		c := calls[id]
		line := "  waiting on " + strings.TrimSpace(c.GetTool()+" "+id)
		if c != nil && !c.GetWaitsForCaller() {
			inDoubt = true
			line += ", left in doubt (started, never finished)"
		}
		fmt.Fprintln(rc.out, line)
	}
	fmt.Fprintf(rc.out, "  continue with: agentrunner runs resume %s --answer CALL_ID='{...}'", r.GetRunId())
	if inDoubt {
		fmt.Fprint(rc.out, " (its result) or --retry CALL_ID (run it again)")
	}
	fmt.Fprintln(rc.out)
}

func orErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// eventPrinter prints a run's events compactly, as `agentrunner sessions
// show` does: "#seq [author] text", then a line per call, response,
// transfer and error. Streamed text is printed as it arrives, on one line.
type eventPrinter struct {
	out      io.Writer
	speaking string // author whose partial text is on the line
}

func (p *eventPrinter) partial(ev *agentrunnerv1.Event) {
	t := eventText(ev)
	if t == "" {
		return
	}
	if p.speaking != ev.GetAuthor() {
		p.endPartial()
		fmt.Fprintf(p.out, "[%s] ", ev.GetAuthor())
		p.speaking = ev.GetAuthor()
	}
	fmt.Fprint(p.out, t)
}

func (p *eventPrinter) endPartial() {
	if p.speaking != "" {
		fmt.Fprintln(p.out)
	}
	p.speaking = ""
}

// complete prints a stored event as "#seq " and its lines; text its
// author just streamed is not printed again.
func (p *eventPrinter) complete(ev *agentrunnerv1.Event) {
	streamed := p.speaking != "" && p.speaking == ev.GetAuthor()
	p.endPartial()
	lines := p.lines(ev, streamed)
	if len(lines) == 0 {
		if streamed {
			return
		}
		lines = []string{"[" + ev.GetAuthor() + "]"}
	}
	fmt.Fprintf(p.out, "#%d %s\n", ev.GetSequence(), strings.Join(lines, "\n"))
}

// lines renders an event: its text, then a line per call, response,
// transfer, escalation and error.
func (p *eventPrinter) lines(ev *agentrunnerv1.Event, streamed bool) []string {
	var out []string
	author := ev.GetAuthor()
	switch t := eventText(ev); {
	case streamed || t == "":
	case author == "user":
		out = append(out, "you> "+t)
	default:
		out = append(out, fmt.Sprintf("[%s] %s", author, t))
	}
	for _, part := range ev.GetContent().GetParts() {
		if fc := part.GetFunctionCall(); fc != nil {
			waits := ""
			if slices.Contains(ev.GetLongRunningToolIds(), fc.GetId()) {
				waits = ", waits for the caller"
			}
			out = append(out, fmt.Sprintf("  -> %s calls %s(%s) (%s%s)", author, fc.GetName(), compactJSON(fc.GetArgs()), fc.GetId(), waits))
		}
		if fr := part.GetFunctionResponse(); fr != nil {
			out = append(out, fmt.Sprintf("  <- %s returned %s", fr.GetName(), compactJSON(fr.GetResponse())))
		}
	}
	if t := ev.GetActions().GetTransferToAgent(); t != "" {
		out = append(out, fmt.Sprintf("  => %s transfers to %s", author, t))
	}
	if ev.GetActions().GetEscalate() {
		out = append(out, fmt.Sprintf("  => %s escalates", author))
	}
	if ev.GetErrorCode() != "" || ev.GetErrorMessage() != "" {
		out = append(out, fmt.Sprintf("! %s: %s %s", author, ev.GetErrorCode(), ev.GetErrorMessage()))
	}
	return out
}

// eventText is the event's text, thoughts left out.
func eventText(ev *agentrunnerv1.Event) string {
	var b strings.Builder
	for _, part := range ev.GetContent().GetParts() {
		if !part.GetThought() {
			b.WriteString(part.GetText())
		}
	}
	return b.String()
}

// compactJSON is chat.Compact, with "{}" for no arguments.
func compactJSON(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	return chat.Compact(s)
}

func shortStatus(s agentrunnerv1.RunStatus) string {
	return strings.TrimPrefix(s.String(), "RUN_STATUS_")
}

// seqRange is the run's stored events as "#first-#last", or empty before
// it stored any.
func seqRange(r *agentrunnerv1.Run) string {
	if r.GetFirstSequence() == 0 {
		return ""
	}
	return fmt.Sprintf("#%d-#%d", r.GetFirstSequence(), r.GetLastSequence())
}

func localTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().Local().Format(time.DateTime)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
