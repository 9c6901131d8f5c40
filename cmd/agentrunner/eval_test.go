package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

const demoEvalSet = "../../examples/evals/support.evalset.json"

// offlineEnv makes the served apps use the offline model whatever the
// developer's shell holds.
func offlineEnv(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", envConfig, envAuthFile} {
		t.Setenv(k, "")
	}
}

// The JUnit schema as a CI reader sees it, declared here apart from the
// writer's types so that the test reads what was written, not what the
// writer meant.
type junitReport struct {
	Suites []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit reads a JUnit report of one suite.
func readJUnit(t *testing.T, path string) junitReport {
	t.Helper()
	r := readJUnitSuites(t, path)
	if len(r.Suites) != 1 {
		t.Fatalf("JUnit report has %d suites", len(r.Suites))
	}
	return r
}

func readJUnitSuites(t *testing.T, path string) junitReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r junitReport
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("JUnit report does not parse: %v\n%s", err, b)
	}
	return r
}

// TestEvalDemoPasses evaluates the demo eval set against the default apps
// (offline model): every case passes twice, the reports parse, the result
// is stored and listed, and the cases' runs are ordinary runs of the user.
func TestEvalDemoPasses(t *testing.T) {
	offlineEnv(t)
	srv := inProcess{}.Serve(t, "--data", filepath.Join(t.TempDir(), "db"))
	dir := t.TempDir()
	junit, js := filepath.Join(dir, "eval.xml"), filepath.Join(dir, "eval.json")
	out, errOut, code := inProcess{}.CLI(t, "eval", demoEvalSet, "--addr", srv.Addr, "--user", "ci", "--repeats", "2",
		"--junit", junit, "--json", js, "--label", "v1")
	if code != 0 || !strings.Contains(out, "3 of 3 cases passed") {
		t.Fatalf("eval exited %d:\n%s\n%s", code, out, errOut)
	}
	rep := readJUnit(t, junit)
	if s := rep.Suites[0]; s.Tests != 3 || s.Failures != 0 || len(s.Cases) != 3 || s.Cases[0].Name != "billing_question" {
		t.Errorf("JUnit suite = %+v", s)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rec agentrunnerv1.EvalRun
	if err := protojson.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.GetPassed() || len(rec.GetCases()) != 3 || len(rec.GetCases()[2].GetRepeats()) != 2 ||
		len(rec.GetCases()[2].GetRepeats()[1].GetInvocations()) != 2 {
		t.Fatalf("JSON result = %v", &rec)
	}
	rep0 := rec.GetCases()[0].GetRepeats()[0]
	runs, err := srv.Runner().ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "support", UserId: "ci", SessionId: rep0.GetSessionId()})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetRunId() != rep0.GetInvocations()[0].GetRunId() {
		t.Errorf("the case's session lists runs %v, %v; want the one run %s", runs, err, rep0.GetInvocations()[0].GetRunId())
	}
	out, _, code = inProcess{}.CLI(t, "eval", "list", "--app", "support", "--addr", srv.Addr, "--user", "ci")
	if code != 0 || !strings.Contains(out, rec.GetEvalRunId()) || !strings.Contains(out, "3/3") {
		t.Errorf("eval list exited %d:\n%s", code, out)
	}
}

const supportApps = `models:
  - { name: flash, provider: offline }
apps:
  - name: support
    root_agent:
      name: triage
      llm: { model: flash, instruction: "Route billing questions to billing and technical ones to tech." }
      sub_agents:
        - name: billing
          description: Answers billing questions.
          llm: { model: flash, instruction: "You answer billing questions." }
        - name: tech
          description: Answers technical questions.
          llm: { model: flash, instruction: "You answer technical questions." }
`

// TestEvalChangedAppFails evaluates the demo set, changes the app (its
// billing specialist becomes "payments", with a new instruction: what a
// prompt change does to the offline model, which routes by agent name)
// and reloads it: the billing cases fail, the table and the JUnit report
// show the trajectory diff, and compare marks the regression.
func TestEvalChangedAppFails(t *testing.T) {
	offlineEnv(t)
	apps := filepath.Join(t.TempDir(), "apps.yaml")
	if err := os.WriteFile(apps, []byte(supportApps), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := inProcess{}.Serve(t, "--data", filepath.Join(t.TempDir(), "db"), "--config", apps)
	cli := func(args ...string) (string, int) {
		out, errOut, code := inProcess{}.CLI(t, append(args, "--addr", srv.Addr, "--user", "ci")...)
		return out + errOut, code
	}
	out, code := cli("eval", demoEvalSet)
	if code != 0 {
		t.Fatalf("before the change, eval exited %d:\n%s", code, out)
	}
	before := regexp.MustCompile(`eval run (\S+):`).FindStringSubmatch(out)[1]
	changed := strings.Replace(supportApps, "name: billing", "name: payments", 1)
	changed = strings.Replace(changed, "You answer billing questions.", "You handle payments.", 1)
	if err := os.WriteFile(apps, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := (inProcess{}).CLI(t, "reload", "--addr", srv.Addr); code != 0 {
		t.Fatalf("reload exited %d: %s", code, out)
	}
	junit := filepath.Join(t.TempDir(), "eval.xml")
	out, code = cli("eval", demoEvalSet, "--junit", junit)
	if code != 1 {
		t.Fatalf("after the change, eval exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"1 of 3 cases passed", "--- FAIL billing_question", "--- FAIL small_talk_then_billing",
		`- tools:    transfer_to_agent({"agent_name":"billing"})`, "+ tools:    (none)", "2 of 3 cases failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("eval output lacks %q:\n%s", want, out)
		}
	}
	rep := readJUnit(t, junit)
	if s := rep.Suites[0]; s.Failures != 2 || s.Cases[0].Failure == nil || !strings.Contains(s.Cases[0].Failure.Body, `"agent_name":"billing"`) {
		t.Errorf("JUnit suite = %+v", s)
	}
	after := regexp.MustCompile(`eval run (\S+):`).FindStringSubmatch(out)[1]
	out, code = cli("eval", "compare", before, after, "--app", "support")
	if code != 0 || !regexp.MustCompile(`billing_question\s+tool_trajectory_avg_score\s+1\.00\s+0\.00\s+REGRESSED`).MatchString(out) {
		t.Errorf("compare exited %d:\n%s", code, out)
	}
}

// TestEvalOnPostgres: the same evaluation on a PostgreSQL store, whose
// result is stored and listed there.
func TestEvalOnPostgres(t *testing.T) {
	offlineEnv(t)
	srv := inProcess{}.Serve(t, "--data", pg.URL(t))
	out, errOut, code := inProcess{}.CLI(t, "eval", demoEvalSet, "--addr", srv.Addr, "--user", "ci", "--repeats", "2")
	if code != 0 || !strings.Contains(out, "3 of 3 cases passed") {
		t.Fatalf("eval exited %d:\n%s\n%s", code, out, errOut)
	}
	id := regexp.MustCompile(`eval run (\S+):`).FindStringSubmatch(out)[1]
	out, _, code = inProcess{}.CLI(t, "eval", "show", id, "--app", "support", "--addr", srv.Addr, "--user", "ci")
	if code != 0 || !strings.Contains(out, "3 of 3 cases passed") || !strings.Contains(out, "small_talk_then_billing") {
		t.Errorf("eval show exited %d:\n%s", code, out)
	}
}

// TestEvalOldTestJSON: an ADK .test.json in the older form (a list of
// turns with query, expected_tool_use and reference) runs as one
// two-turn case, with the test_config.json beside it.
func TestEvalOldTestJSON(t *testing.T) {
	offlineEnv(t)
	srv := inProcess{}.Serve(t, "--data", filepath.Join(t.TempDir(), "db"))
	js := filepath.Join(t.TempDir(), "eval.json")
	out, errOut, code := inProcess{}.CLI(t, "eval", "../../examples/evals/test_json/support.test.json", "--app", "support",
		"--addr", srv.Addr, "--user", "ci", "--json", js)
	if code != 0 || !strings.Contains(out, "support.test.json  PASS") {
		t.Fatalf("eval exited %d:\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rec agentrunnerv1.EvalRun
	if err := protojson.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	invs := rec.GetCases()[0].GetRepeats()[0].GetInvocations()
	if len(invs) != 2 || invs[1].GetActualToolUses()[0].GetArgs().AsMap()["agent_name"] != "tech" || len(rec.GetCriteria()) != 2 {
		t.Errorf("result = %v", &rec)
	}
}

// TestEvalDirectory: a directory is evaluated file by file (every
// .evalset.json and .test.json under it, each with the test_config.json
// beside it); the JUnit report has a suite per file and the JSON lists
// the evaluations.
func TestEvalDirectory(t *testing.T) {
	offlineEnv(t)
	srv := inProcess{}.Serve(t, "--data", filepath.Join(t.TempDir(), "db"))
	dir := t.TempDir()
	junit, js := filepath.Join(dir, "eval.xml"), filepath.Join(dir, "eval.json")
	out, errOut, code := inProcess{}.CLI(t, "eval", "../../examples/evals", "--app", "support", "--addr", srv.Addr, "--user", "ci",
		"--junit", junit, "--json", js)
	if code != 0 || strings.Count(out, "eval run ") != 2 {
		t.Fatalf("eval exited %d:\n%s\n%s", code, out, errOut)
	}
	rep := readJUnitSuites(t, junit)
	if len(rep.Suites) != 2 || rep.Suites[0].Name != "support/support_demo" || rep.Suites[1].Name != "support/support.test.json" {
		t.Errorf("JUnit suites = %+v", rep.Suites)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var list servicev1.ListEvalRunsResponse
	if err := protojson.Unmarshal(b, &list); err != nil || len(list.GetEvalRuns()) != 2 {
		t.Errorf("JSON = %s, %v", b, err)
	}
}
