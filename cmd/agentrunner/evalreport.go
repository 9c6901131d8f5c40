package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// printEvalRun prints an evaluation as a table, one row per case and a
// column per criterion (score/threshold), then, with diffs, what each
// failed case's turns expected and got.
func printEvalRun(w io.Writer, rec *agentrunnerv1.EvalRun, diffs bool) {
	fmt.Fprintf(w, "eval run %s: app %s, eval set %s, %d repeat(s), user %s", rec.GetEvalRunId(), rec.GetAppName(),
		rec.GetEvalSetId(), rec.GetRepeats(), rec.GetUserId())
	if rec.GetLabel() != "" {
		fmt.Fprintf(w, ", label %q", rec.GetLabel())
	}
	fmt.Fprintf(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "CASE\tRESULT")
	for _, c := range rec.GetCriteria() {
		fmt.Fprintf(tw, "\t%s", criterionName(c))
	}
	fmt.Fprintln(tw)
	for _, c := range rec.GetCases() {
		fmt.Fprintf(tw, "%s\t%s", c.GetEvalId(), passFail(c.GetPassed()))
		for _, m := range c.GetMetrics() {
			fmt.Fprintf(tw, "\t%.2f/%.2f", m.GetScore(), m.GetThreshold())
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d of %d cases passed\n", len(rec.GetCases())-failedCases(rec), len(rec.GetCases()))
	if !diffs {
		return
	}
	for _, c := range rec.GetCases() {
		if !c.GetPassed() {
			printCaseDiff(w, c)
		}
	}
}

func criterionName(c *agentrunnerv1.EvalCriterion) string {
	if c.GetMatchType() != "" && c.GetMatchType() != "EXACT" {
		return c.GetMetric() + "(" + c.GetMatchType() + ")"
	}
	return c.GetMetric()
}

// prefixed is s after p, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// printCaseDiff prints the turns of a failed case where something differs:
// tool calls or response, expected against actual, with the session and
// run to look them up by.
func printCaseDiff(w io.Writer, c *agentrunnerv1.EvalCaseResult) {
	fmt.Fprintf(w, "\n--- FAIL %s\n", c.GetEvalId())
	for _, m := range c.GetMetrics() {
		if !m.GetPassed() {
			fmt.Fprintf(w, "    %s: %.4f < %.2f%s\n", m.GetMetric(), m.GetScore(), m.GetThreshold(), prefixed(" ", m.GetError()))
		}
	}
	for r, rep := range c.GetRepeats() {
		if rep.GetError() != "" {
			fmt.Fprintf(w, "    repeat %d (session %s): %s\n", r+1, rep.GetSessionId(), rep.GetError())
		}
		for i, inv := range rep.GetInvocations() {
			et, at := toolCalls(inv.GetExpectedToolUses()), toolCalls(inv.GetActualToolUses())
			if et == at && inv.GetExpectedResponse() == inv.GetActualResponse() {
				continue
			}
			fmt.Fprintf(w, "    repeat %d, turn %d (session %s, run %s): user: %q\n", r+1, i+1, rep.GetSessionId(), inv.GetRunId(), inv.GetUserText())
			if et != at {
				fmt.Fprintf(w, "      - tools:    %s\n      + tools:    %s\n", et, at)
			}
			if inv.GetExpectedResponse() != inv.GetActualResponse() {
				fmt.Fprintf(w, "      - response: %q\n      + response: %q\n", inv.GetExpectedResponse(), inv.GetActualResponse())
			}
		}
	}
}

// toolCalls renders calls as name(args JSON), in order.
func toolCalls(calls []*agentrunnerv1.FunctionCall) string {
	if len(calls) == 0 {
		return "(none)"
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		args, _ := json.Marshal(c.GetArgs().AsMap())
		parts[i] = c.GetName() + "(" + string(args) + ")"
	}
	return strings.Join(parts, ", ")
}

// printComparison prints two evaluations side by side, case by case: each
// metric's score in a and b and what changed (a case passing in one and
// failing in the other is marked).
func printComparison(w io.Writer, a, b *agentrunnerv1.EvalRun) {
	fmt.Fprintf(w, "A %s (%s, %s)\nB %s (%s, %s)\n\n", a.GetEvalRunId(), a.GetCreateTime().AsTime().Format("2006-01-02T15:04:05Z"), a.GetLabel(),
		b.GetEvalRunId(), b.GetCreateTime().AsTime().Format("2006-01-02T15:04:05Z"), b.GetLabel())
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tMETRIC\tA\tB\tCHANGE")
	bCases := map[string]*agentrunnerv1.EvalCaseResult{}
	for _, c := range b.GetCases() {
		bCases[c.GetEvalId()] = c
	}
	for _, ca := range a.GetCases() {
		cb := bCases[ca.GetEvalId()]
		delete(bCases, ca.GetEvalId())
		if cb == nil {
			fmt.Fprintf(tw, "%s\t\t%s\t-\tonly in A\n", ca.GetEvalId(), passFail(ca.GetPassed()))
			continue
		}
		bm := map[string]*agentrunnerv1.EvalMetricResult{}
		for _, m := range cb.GetMetrics() {
			bm[m.GetMetric()] = m
		}
		for _, m := range ca.GetMetrics() {
			change := ""
			if o := bm[m.GetMetric()]; o != nil {
				switch {
				case m.GetPassed() && !o.GetPassed():
					change = "REGRESSED"
				case !m.GetPassed() && o.GetPassed():
					change = "FIXED"
				case o.GetScore() != m.GetScore():
					change = fmt.Sprintf("%+.2f", o.GetScore()-m.GetScore())
				}
				fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%s\n", ca.GetEvalId(), m.GetMetric(), m.GetScore(), o.GetScore(), change)
			}
		}
	}
	for _, c := range b.GetCases() {
		if bCases[c.GetEvalId()] != nil {
			fmt.Fprintf(tw, "%s\t\t-\t%s\tonly in B\n", c.GetEvalId(), passFail(c.GetPassed()))
		}
	}
	tw.Flush()
}

// The JUnit XML shape CI systems read (Jenkins, GitLab, GitHub actions'
// test reporters): one testsuite per evaluation, one testcase per case,
// a failure element with the failed metrics and the diff.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Props     []junitProp `xml:"properties>property"`
	Cases     []junitCase `xml:"testcase"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// junitXML renders evaluations as JUnit XML, a suite each.
func junitXML(recs []*agentrunnerv1.EvalRun) ([]byte, error) {
	var all junitSuites
	for _, rec := range recs {
		all.Suites = append(all.Suites, junitSuiteOf(rec))
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func junitSuiteOf(rec *agentrunnerv1.EvalRun) junitSuite {
	s := junitSuite{
		Name: rec.GetAppName() + "/" + rec.GetEvalSetId(), Tests: len(rec.GetCases()), Failures: failedCases(rec),
		Time:      rec.GetEndTime().AsTime().Sub(rec.GetCreateTime().AsTime()).Seconds(),
		Timestamp: rec.GetCreateTime().AsTime().Format("2006-01-02T15:04:05Z"),
		Props: []junitProp{{"eval_run_id", rec.GetEvalRunId()}, {"user_id", rec.GetUserId()},
			{"repeats", fmt.Sprint(rec.GetRepeats())}, {"label", rec.GetLabel()}},
	}
	for _, c := range rec.GetCases() {
		jc := junitCase{Name: c.GetEvalId(), Classname: rec.GetAppName() + "." + rec.GetEvalSetId()}
		var scores []string
		for _, m := range c.GetMetrics() {
			scores = append(scores, fmt.Sprintf("%s=%.4f (threshold %.2f)", m.GetMetric(), m.GetScore(), m.GetThreshold()))
		}
		jc.SystemOut = strings.Join(scores, "\n")
		if !c.GetPassed() {
			var body strings.Builder
			printCaseDiff(&body, c)
			jc.Failure = &junitFailure{Message: failedMetrics(c), Type: "EvalFailure", Body: body.String()}
		}
		s.Cases = append(s.Cases, jc)
	}
	return s
}

func failedMetrics(c *agentrunnerv1.EvalCaseResult) string {
	var out []string
	for _, m := range c.GetMetrics() {
		if !m.GetPassed() {
			out = append(out, fmt.Sprintf("%s %.4f < %.2f", m.GetMetric(), m.GetScore(), m.GetThreshold()))
		}
	}
	for _, r := range c.GetRepeats() {
		if r.GetError() != "" {
			out = append(out, r.GetError())
			break
		}
	}
	return strings.Join(out, "; ")
}
