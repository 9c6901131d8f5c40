package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/clientconn"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/cliflags"
	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/spendfmt"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

const usageUsage = `Usage:
  agentrunner usage --app APP [--user U] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--json]

Prints what an app's model calls used and cost (GetUsage), by UTC day and
model, with the totals: of one user with --user, else of every user (which
needs a principal allowed every user, such as an admin). --to defaults to
today (UTC), --from to 29 days before --to; a range is at most 366 days.
A cost is "unknown" when no call of the row was priced, and a lower bound
("≥") when some were not.

Flags:
`

// usageFlags are the flags of `agentrunner usage`.
type usageFlags struct {
	addr, app, user, from, to string
	json                      bool
	conn                      clientconn.Flags
}

// usageCommand runs `agentrunner usage`; args are the arguments after
// "usage".
func usageCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseUsageFlags(args, stderr)
	if err != nil {
		return err
	}
	conn, err := f.conn.Dial(f.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := servicev1.NewUsageServiceClient(conn).GetUsage(ctx, &servicev1.GetUsageRequest{
		AppName: f.app, UserId: f.user, StartDate: f.from, EndDate: f.to,
	})
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
	printUsage(stdout, f, resp)
	return nil
}

func parseUsageFlags(args []string, stderr io.Writer) (*usageFlags, error) {
	f := &usageFlags{}
	fs := flag.NewFlagSet("agentrunner usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", clientAddr(), "server address (env "+envAddr+")")
	f.conn.Register(fs)
	fs.StringVar(&f.app, "app", "", "the app (required)")
	fs.StringVar(&f.user, "user", "", "one user's usage; empty is every user's together")
	fs.StringVar(&f.from, "from", "", "first UTC day, `YYYY-MM-DD`; empty is 29 days before --to")
	fs.StringVar(&f.to, "to", "", "last UTC day, `YYYY-MM-DD`; empty is today")
	fs.BoolVar(&f.json, "json", false, "print the GetUsage response as protojson")
	positional, err := cliflags.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, err
	case err != nil:
		return nil, usagef("usage: %v", err)
	case len(positional) > 0:
		return nil, usagef("usage takes no arguments, got %q (the app goes in --app)", positional)
	case f.app == "":
		return nil, usagef("usage: --app is required")
	}
	// Checked here too, so that the message names the flag rather than
	// the request's field.
	for _, d := range []struct{ flag, v string }{{"--from", f.from}, {"--to", f.to}} {
		if _, err := time.Parse(time.DateOnly, d.v); d.v != "" && err != nil {
			return nil, usagef("usage: %s %q is not a date of the form YYYY-MM-DD", d.flag, d.v)
		}
	}
	return f, nil
}

// printUsage prints the response as a table: a row per day and model,
// then the totals.
func printUsage(out io.Writer, f *usageFlags, resp *servicev1.GetUsageResponse) {
	who := "every user"
	if f.user != "" {
		who = "user " + f.user
	}
	fmt.Fprintf(out, "usage of app %s, %s, %s to %s (UTC days)\n", f.app, who, resp.GetStartDate(), resp.GetEndDate())
	if len(resp.GetDays()) == 0 {
		fmt.Fprintln(out, "no model calls in this range")
		return
	}
	width := len("MODEL")
	for _, d := range resp.GetDays() {
		width = max(width, utf8.RuneCountInString(d.GetModel()))
	}
	row := func(date, model string, s *agentrunnerv1.Spend, cost string) {
		u := s.GetUsage()
		line := fmt.Sprintf("%-10s  %-*s  %9s  %11s  %11s  %11s  %s", date, width, model, spendfmt.Count(s.GetModelCalls()),
			spendfmt.Count(int64(u.GetPromptTokenCount())), spendfmt.Count(int64(u.GetCandidatesTokenCount())),
			spendfmt.Count(int64(u.GetTotalTokenCount())), cost)
		fmt.Fprintln(out, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("%-10s  %-*s  %9s  %11s  %11s  %11s  %s", "DATE", width, "MODEL", "CALLS", "PROMPT", "OUTPUT", "TOKENS", "COST"), " "))
	for _, d := range resp.GetDays() {
		row(d.GetDate(), d.GetModel(), d.GetSpend(), spendfmt.Short(d.GetSpend().GetCost()))
	}
	total := spendfmt.Cost(resp.GetTotal().GetCost())
	if total == "" {
		total = "-"
	}
	row("total", "", resp.GetTotal(), total)
}
