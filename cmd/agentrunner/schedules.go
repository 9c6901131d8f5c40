package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

const schedulesUsage = `Usage:
  agentrunner schedules list --app APP [--user U] [--json]
  agentrunner schedules get ID [--json]
  agentrunner schedules create --app APP --user U --cron EXPR --message TEXT
      [--tz ZONE] [--session ID] [--missed skip|run_once] [--description TEXT] [--json]
  agentrunner schedules delete ID
  agentrunner schedules pause|resume ID

Lists, shows, creates and deletes the schedules that start runs at cron
times (ScheduleService), with each one's last and next firing. A
schedule's runs are its owner's (--user), in a fresh session each time or
in the fixed --session. The cron is 5 fields (minute hour day month
weekday), 6 with seconds first, or @hourly, @daily, @weekly, @monthly,
@yearly, @every 10m, read in the IANA zone --tz (default UTC). --missed
says what times missed while no replica served do: skip them (default),
or run once for the latest. A paused schedule fires nothing; resumed, the
times it passed are missed ones. Schedules of the apps file are listed too
and are changed there.

Flags:
`

// schedulesFlags are the flags of `agentrunner schedules`.
type schedulesFlags struct {
	addr, app, user, cron, tz, session, message, missed, description string
	json                                                             bool
	conn                                                             clientconn.Flags
}

// schedulesCommand runs `agentrunner schedules`; args are the arguments
// after "schedules".
func schedulesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !strings.Contains(" list get create delete pause resume ", " "+args[0]+" ") {
		fs := newSchedulesFlagSet(&schedulesFlags{}, stderr)
		fs.Usage()
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return flag.ErrHelp
		}
		return usagef("schedules: want list, get, create, delete, pause or resume")
	}
	cmd := args[0]
	f, id, err := parseSchedulesFlags(cmd, args[1:], stderr)
	if err != nil {
		return err
	}
	conn, err := f.conn.Dial(f.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	sc := servicev1.NewScheduleServiceClient(conn)
	var resp proto.Message
	var scheds []*agentrunnerv1.Schedule
	switch cmd {
	case "list":
		r, e := sc.ListSchedules(ctx, &servicev1.ListSchedulesRequest{AppName: f.app, UserId: f.user})
		resp, scheds, err = r, r.GetSchedules(), e
	case "get":
		r, e := sc.GetSchedule(ctx, &servicev1.GetScheduleRequest{ScheduleId: id})
		resp, scheds, err = r, []*agentrunnerv1.Schedule{r.GetSchedule()}, e
	case "create":
		r, e := sc.CreateSchedule(ctx, &servicev1.CreateScheduleRequest{Schedule: f.schedule()})
		resp, scheds, err = r, []*agentrunnerv1.Schedule{r.GetSchedule()}, e
	case "pause":
		r, e := sc.PauseSchedule(ctx, &servicev1.PauseScheduleRequest{ScheduleId: id})
		resp, scheds, err = r, []*agentrunnerv1.Schedule{r.GetSchedule()}, e
	case "resume":
		r, e := sc.ResumeSchedule(ctx, &servicev1.ResumeScheduleRequest{ScheduleId: id})
		resp, scheds, err = r, []*agentrunnerv1.Schedule{r.GetSchedule()}, e
	case "delete":
		if _, err := sc.DeleteSchedule(ctx, &servicev1.DeleteScheduleRequest{ScheduleId: id}); err != nil {
			return describeRPC(err)
		}
		fmt.Fprintf(stdout, "deleted schedule %s\n", id)
		return nil
	}
	if err != nil {
		return describeRPC(err)
	}
	if f.json {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(resp)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return nil
	}
	printSchedules(stdout, scheds)
	return nil
}

func newSchedulesFlagSet(f *schedulesFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agentrunner schedules", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, schedulesUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", clientAddr(), "server address (env "+envAddr+")")
	f.conn.Register(fs)
	fs.StringVar(&f.app, "app", "", "the app (list, create)")
	fs.StringVar(&f.user, "user", "", "the owner: the user the runs are of (create); list: one user's, empty every user's")
	fs.StringVar(&f.cron, "cron", "", "when it fires: 5 or 6 cron fields or a descriptor (create)")
	fs.StringVar(&f.tz, "tz", "", "IANA time zone of the cron fields, e.g. Europe/Paris; empty is UTC (create)")
	fs.StringVar(&f.session, "session", "", "a fixed session for the runs; empty is a fresh session each time (create)")
	fs.StringVar(&f.message, "message", "", "the text of the user message each run starts with (create)")
	fs.StringVar(&f.missed, "missed", "skip", "times missed while no replica served: skip or run_once (create)")
	fs.StringVar(&f.description, "description", "", "what the schedule is for (create)")
	fs.BoolVar(&f.json, "json", false, "print the response as protojson")
	return fs
}

func parseSchedulesFlags(cmd string, args []string, stderr io.Writer) (*schedulesFlags, string, error) {
	f := &schedulesFlags{}
	fs := newSchedulesFlagSet(f, stderr)
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, "", err
	case err != nil:
		return nil, "", usagef("schedules %s: %v", cmd, err)
	}
	needID := cmd == "get" || cmd == "delete" || cmd == "pause" || cmd == "resume"
	switch {
	case needID && len(positional) != 1:
		return nil, "", usagef("schedules %s takes one schedule id, got %q", cmd, positional)
	case !needID && len(positional) > 0:
		return nil, "", usagef("schedules %s takes no arguments, got %q", cmd, positional)
	case (cmd == "list" || cmd == "create") && f.app == "":
		return nil, "", usagef("schedules %s: --app is required", cmd)
	case cmd == "create" && (f.user == "" || f.cron == "" || f.message == ""):
		return nil, "", usagef("schedules create: --user, --cron and --message are required")
	case f.missed != "skip" && f.missed != "run_once":
		return nil, "", usagef("schedules %s: --missed %q: want skip or run_once", cmd, f.missed)
	}
	id := ""
	if needID {
		id = positional[0]
	}
	return f, id, nil
}

// schedule is the schedule create asks for.
func (f *schedulesFlags) schedule() *agentrunnerv1.Schedule {
	policy := agentrunnerv1.MissedPolicy_MISSED_POLICY_SKIP
	if f.missed == "run_once" {
		policy = agentrunnerv1.MissedPolicy_MISSED_POLICY_RUN_ONCE
	}
	return &agentrunnerv1.Schedule{
		AppName: f.app, UserId: f.user, Cron: f.cron, TimeZone: f.tz, SessionId: f.session,
		MissedPolicy: policy, Description: f.description,
		NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: f.message}}}},
	}
}

// printSchedules prints a table: a schedule a row, with its last firing
// (and the run it started, or why none) and its next.
func printSchedules(out io.Writer, scheds []*agentrunnerv1.Schedule) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tCRON\tZONE\tSESSION\tMISSED\tLAST FIRE\tLAST RUN\tNEXT FIRE")
	for _, s := range scheds {
		zone, session := s.GetTimeZone(), s.GetSessionId()
		if zone == "" {
			zone = "UTC"
		}
		if session == "" {
			session = "(fresh)"
		}
		last := s.GetLastRunId()
		if s.GetLastError() != "" {
			last = "refused: " + s.GetLastError()
		}
		missed := strings.ToLower(strings.TrimPrefix(s.GetMissedPolicy().String(), "MISSED_POLICY_"))
		if s.GetMissedPolicy() == agentrunnerv1.MissedPolicy_MISSED_POLICY_UNSPECIFIED {
			missed = "skip"
		}
		next := fireStamp(s.GetNextFireTime())
		if s.GetPaused() {
			next = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.GetScheduleId(), s.GetUserId(), s.GetCron(), zone, session,
			missed, fireStamp(s.GetLastFireTime()), dash(last), next)
	}
	_ = tw.Flush()
}

func fireStamp(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
