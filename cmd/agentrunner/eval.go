package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/eval"
)

const evalUsage = `Usage:
  agentrunner eval FILE|DIR [--app APP] [--test-config FILE] [--repeats N] [--parallel N]
                   [--label TEXT] [--junit FILE] [--json FILE] [--user U]
  agentrunner eval list  --app APP [--user U] [--all-users] [--limit N]
  agentrunner eval show  EVAL_RUN_ID --app APP [--user U] [--json]
  agentrunner eval compare EVAL_RUN_ID EVAL_RUN_ID --app APP [--user U]
  agentrunner eval save-session --app APP --session S --out FILE [--user U] [--eval-id ID]

Evaluates an app of a running server against adk-python's eval files (an
.evalset.json or a .test.json, or every such file under DIR): the server runs every case --repeats times,
each in a fresh session of --user, turn by turn, as ordinary runs, scores
them with the criteria of test_config.json (by default the one next to
FILE, as adk does, else ADK's defaults: tool_trajectory_avg_score 1.0,
response_match_score 0.8), and stores the result. It prints a table and
the diffs of the failed cases, and exits with 1 when a case failed.

list, show and compare read stored evaluations; save-session writes a
session's turns as an eval case (its tool calls and final responses as
the expected ones) into FILE, adding to the eval set there if any.

Flags:
`

// evalFlags are the settings of `agentrunner eval`.
type evalFlags struct {
	addr, app, user, config, label string
	junit, json, out, session      string
	evalID                         string
	repeats, parallel, limit       int
	allUsers, printJSON            bool
	conn                           clientconn.Flags
}

func newEvalFlagSet(f *evalFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentrunner eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, evalUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", clientAddr(), "server address (env "+envAddr+")")
	f.conn.Register(fs)
	fs.StringVar(&f.app, "app", "", "app to evaluate; default: the cases' session_input.app_name")
	fs.StringVar(&f.user, "user", clientUser(), "user the cases run as, whose evaluations to read (env USER)")
	fs.StringVar(&f.config, "test-config", "", "ADK test_config.json with the criteria; default: test_config.json next to FILE, if any")
	fs.IntVar(&f.repeats, "repeats", 1, "times each case runs")
	fs.IntVar(&f.parallel, "parallel", 4, "repeats of cases that run at once")
	fs.StringVar(&f.label, "label", "", "text stored with the result (a commit, a prompt version)")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	fs.StringVar(&f.json, "json", "", "write the result as JSON (protojson EvalRun) to `FILE`")
	fs.BoolVar(&f.printJSON, "print-json", false, "show: print the result as JSON instead of a table")
	fs.IntVar(&f.limit, "limit", 0, "list: at most `N` evaluations (0: the server's default, 50)")
	fs.BoolVar(&f.allUsers, "all-users", false, "list: every user's evaluations (admins)")
	fs.StringVar(&f.session, "session", "", "save-session: the session to save")
	fs.StringVar(&f.out, "out", "", "save-session: the .evalset.json to write or add to")
	fs.StringVar(&f.evalID, "eval-id", "", "save-session: the case's eval_id; default: the session id")
	return fs
}

// evalCommand runs `agentrunner eval`; args are the arguments after "eval".
func evalCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := &evalFlags{}
	fs := newEvalFlagSet(f, stderr)
	pos, err := cliflags.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("eval: %v", err)
	}
	if len(pos) == 0 {
		fs.Usage()
		return usagef("eval: missing FILE (or list, show, compare, save-session)")
	}
	sub, rest := pos[0], pos[1:]
	if err := checkEvalArgs(sub, rest, f); err != nil {
		return err
	}
	conn, err := f.conn.Dial(f.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ec := evalClient{evals: servicev1.NewEvalServiceClient(conn), sessions: servicev1.NewSessionServiceClient(conn), f: f, out: stdout}
	switch sub {
	case "list":
		return ec.list(ctx)
	case "show":
		return ec.show(ctx, rest[0])
	case "compare":
		return ec.compare(ctx, rest[0], rest[1])
	case "save-session":
		return ec.saveSession(ctx)
	}
	return ec.run(ctx, sub)
}

func checkEvalArgs(sub string, rest []string, f *evalFlags) error {
	want := map[string]int{"list": 0, "show": 1, "compare": 2, "save-session": 0}
	n, named := want[sub]
	switch {
	case !named && len(rest) > 0:
		return usagef("eval: want one FILE, got %q", append([]string{sub}, rest...))
	case named && len(rest) != n:
		return usagef("eval %s: want %d arguments, got %d", sub, n, len(rest))
	case named && f.app == "":
		return usagef("eval %s: --app is required", sub)
	case sub == "save-session" && (f.session == "" || f.out == ""):
		return usagef("eval save-session: --session and --out are required")
	}
	return nil
}

// evalClient is one `eval` command's connection and output.
type evalClient struct {
	evals    servicev1.EvalServiceClient
	sessions servicev1.SessionServiceClient
	f        *evalFlags
	out      io.Writer
}

// run evaluates the eval set in path, or every eval file under path when
// it is a directory (as ADK's AgentEvaluator walks one), and reports them.
func (ec evalClient) run(ctx context.Context, path string) error {
	files, err := evalFiles(path)
	if err != nil {
		return err
	}
	var recs []*agentrunnerv1.EvalRun
	failed, cases := 0, 0
	for i, file := range files {
		if i > 0 {
			fmt.Fprintln(ec.out)
		}
		rec, err := ec.runFile(ctx, file)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		printEvalRun(ec.out, rec, true)
		recs = append(recs, rec)
		failed, cases = failed+failedCases(rec), cases+len(rec.GetCases())
	}
	if err := writeEvalReports(recs, ec.f.junit, ec.f.json); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("eval: %d of %d cases failed", failed, cases)
	}
	return nil
}

// evalFiles is path, or the .evalset.json and .test.json files under the
// directory path, in order.
func evalFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return []string{path}, err
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".evalset.json") || strings.HasSuffix(p, ".test.json")) {
			files = append(files, p)
		}
		return err
	})
	if err == nil && len(files) == 0 {
		err = usagef("eval: no .evalset.json or .test.json file under %s", path)
	}
	return files, err
}

// runFile evaluates one eval file with its criteria.
func (ec evalClient) runFile(ctx context.Context, path string) (*agentrunnerv1.EvalRun, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	set, err := eval.Load(filepath.Base(path), data)
	if err != nil {
		return nil, usagef("eval: %v", err)
	}
	app := ec.f.app
	if app == "" {
		if app = caseApp(set); app == "" {
			return nil, usagef("eval: --app is required (the cases name no single session_input.app_name)")
		}
	}
	config, err := readEvalConfig(path, ec.f.config)
	if err != nil {
		return nil, err
	}
	resp, err := ec.evals.RunEval(ctx, &servicev1.RunEvalRequest{
		AppName: app, UserId: ec.f.user, EvalSet: data, EvalSetName: filepath.Base(path), Config: config,
		Repeats: int32(ec.f.repeats), Parallelism: int32(ec.f.parallel), Label: ec.f.label,
	})
	if err != nil {
		return nil, describeRPC(err)
	}
	return resp.GetEvalRun(), nil
}

// caseApp is the app every case's session_input names, or "".
func caseApp(set *eval.EvalSet) string {
	app := ""
	for _, c := range set.EvalCases {
		if c.SessionInput == nil || c.SessionInput.AppName == "" || (app != "" && c.SessionInput.AppName != app) {
			return ""
		}
		app = c.SessionInput.AppName
	}
	return app
}

// readEvalConfig reads --config, or test_config.json next to the eval
// file (as ADK's AgentEvaluator finds it); nil when there is neither.
func readEvalConfig(evalPath, flagPath string) ([]byte, error) {
	if flagPath != "" {
		return os.ReadFile(flagPath)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(evalPath), "test_config.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writeEvalReports writes the JUnit report (a suite per evaluation) and
// the JSON result: the EvalRun of one file, or, for several (a directory),
// {"evalRuns": [...]} as ListEvalRunsResponse has them.
func writeEvalReports(recs []*agentrunnerv1.EvalRun, junitPath, jsonPath string) error {
	if junitPath != "" {
		b, err := junitXML(recs)
		if err != nil {
			return err
		}
		if err := os.WriteFile(junitPath, b, 0o644); err != nil {
			return err
		}
	}
	if jsonPath == "" {
		return nil
	}
	var msg proto.Message = &servicev1.ListEvalRunsResponse{EvalRuns: recs}
	if len(recs) == 1 {
		msg = recs[0]
	}
	b, err := protojson.MarshalOptions{Multiline: true}.Marshal(msg)
	if err != nil {
		return err
	}
	return os.WriteFile(jsonPath, append(b, '\n'), 0o644)
}

func failedCases(rec *agentrunnerv1.EvalRun) int {
	n := 0
	for _, c := range rec.GetCases() {
		if !c.GetPassed() {
			n++
		}
	}
	return n
}

func (ec evalClient) list(ctx context.Context) error {
	user := ec.f.user
	if ec.f.allUsers {
		user = ""
	}
	resp, err := ec.evals.ListEvalRuns(ctx, &servicev1.ListEvalRunsRequest{AppName: ec.f.app, UserId: user, Limit: int32(ec.f.limit)})
	if err != nil {
		return describeRPC(err)
	}
	fmt.Fprintf(ec.out, "%-26s  %-20s  %-8s  %-6s  %-12s  %s\n", "EVAL RUN", "CREATED", "USER", "PASSED", "EVAL SET", "LABEL")
	for _, r := range resp.GetEvalRuns() {
		fmt.Fprintf(ec.out, "%-26s  %-20s  %-8s  %d/%-4d  %-12s  %s\n", r.GetEvalRunId(), r.GetCreateTime().AsTime().Format("2006-01-02T15:04:05Z"),
			r.GetUserId(), len(r.GetCases())-failedCases(r), len(r.GetCases()), r.GetEvalSetId(), r.GetLabel())
	}
	return nil
}

func (ec evalClient) get(ctx context.Context, id string) (*agentrunnerv1.EvalRun, error) {
	resp, err := ec.evals.GetEvalRun(ctx, &servicev1.GetEvalRunRequest{AppName: ec.f.app, UserId: ec.f.user, EvalRunId: id})
	if err != nil {
		return nil, describeRPC(err)
	}
	return resp.GetEvalRun(), nil
}

func (ec evalClient) show(ctx context.Context, id string) error {
	rec, err := ec.get(ctx, id)
	if err != nil {
		return err
	}
	if ec.f.printJSON {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(ec.out, string(b))
		return err
	}
	printEvalRun(ec.out, rec, true)
	return nil
}

func (ec evalClient) compare(ctx context.Context, a, b string) error {
	ra, err := ec.get(ctx, a)
	if err != nil {
		return err
	}
	rb, err := ec.get(ctx, b)
	if err != nil {
		return err
	}
	printComparison(ec.out, ra, rb)
	return nil
}
