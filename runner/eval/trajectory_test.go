package eval

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The trajectory expectations below are worked out by hand from ADK's
// TrajectoryEvaluator (src/google/adk/evaluation/trajectory_evaluator.py):
// per invocation 1.0 when the calls match, else 0.0; EXACT wants the same
// length and each pair equal in order; IN_ORDER walks the actual calls and
// advances through the expected ones on each match, passing when it gets
// past the last (an empty expected list passes); ANY_ORDER removes, for
// each expected call, the first matching actual call from a copy and fails
// when none is left (an empty expected list passes). Calls match on name
// and args compared with Python's dict ==, where 1 == 1.0 and True == 1.

func call(name string, argsJSON string) FunctionCall {
	var args map[string]any
	if argsJSON != "" {
		if err := decodeNormalized(mustJSON(argsJSON), &args); err != nil {
			panic(err)
		}
	}
	return FunctionCall{Name: name, Args: args}
}

func mustJSON(s string) any {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	return v
}

func TestTrajectoryMatchTypes(t *testing.T) {
	paris := call("get_weather", `{"city":"Paris"}`)
	oslo := call("get_weather", `{"city":"Oslo"}`)
	rome := call("get_weather", `{"city":"Rome"}`)
	look := call("lookup", "")
	type want struct{ exact, inOrder, anyOrder float64 }
	tests := []struct {
		name             string
		actual, expected []FunctionCall
		want             want
	}{
		{"same calls", []FunctionCall{paris, oslo}, []FunctionCall{paris, oslo}, want{1, 1, 1}},
		{"swapped", []FunctionCall{oslo, paris}, []FunctionCall{paris, oslo}, want{0, 0, 1}},
		{"extra call between", []FunctionCall{paris, look, oslo}, []FunctionCall{paris, oslo}, want{0, 1, 1}},
		{"both empty", nil, nil, want{1, 1, 1}},
		{"unexpected call", []FunctionCall{paris}, nil, want{0, 1, 1}},
		{"missing call", nil, []FunctionCall{paris}, want{0, 0, 0}},
		{"repeated call twice", []FunctionCall{paris, paris}, []FunctionCall{paris, paris}, want{1, 1, 1}},
		{"repeated call once", []FunctionCall{paris}, []FunctionCall{paris, paris}, want{0, 0, 0}},
		{"other args", []FunctionCall{rome}, []FunctionCall{paris}, want{0, 0, 0}},
		{"swapped with extra", []FunctionCall{oslo, look, paris}, []FunctionCall{paris, oslo}, want{0, 0, 1}},
	}
	for _, tt := range tests {
		for _, m := range []struct {
			mt   MatchType
			want float64
		}{{MatchExact, tt.want.exact}, {MatchInOrder, tt.want.inOrder}, {MatchAnyOrder, tt.want.anyOrder}} {
			got := 0.0
			if TrajectoryMatch(m.mt, tt.actual, tt.expected, false) {
				got = 1
			}
			if got != m.want {
				t.Errorf("%s, %s: score %v, want %v", tt.name, m.mt, got, m.want)
			}
		}
	}
	if !TrajectoryMatch(MatchExact, []FunctionCall{rome}, []FunctionCall{paris}, true) {
		t.Error("ignore_args: get_weather(Rome) should match get_weather(Paris)")
	}
}

func TestArgsComparedAsPythonDicts(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"days":1}`, `{"days":1.0}`, true},     // 1 == 1.0
		{`{"flag":true}`, `{"flag":1}`, true},    // True == 1
		{`{"flag":false}`, `{"flag":0.0}`, true}, // False == 0.0
		{`{"n":"1"}`, `{"n":1}`, false},          // '1' != 1
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[1,2]}}`, true},
		{`{"a":{"b":[1,2]}}`, `{"a":{"b":[2,1]}}`, false}, // lists are ordered
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":null}`, `{"a":null}`, true},
		{`{"a":null}`, `{}`, false},
		{`{"big":100000000000000000001}`, `{"big":100000000000000000000}`, false}, // Python ints are exact
	}
	for _, tt := range tests {
		var a, b map[string]any
		if err := decodeNormalized(mustJSON(tt.a), &a); err != nil {
			t.Fatal(err)
		}
		if err := decodeNormalized(mustJSON(tt.b), &b); err != nil {
			t.Fatal(err)
		}
		if got := ArgsEqual(a, b); got != tt.want {
			t.Errorf("ArgsEqual(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func rougeF(t *testing.T, candidate, reference string) float64 {
	t.Helper()
	data, err := os.ReadFile("testdata/rouge_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Candidate, Reference string
		F                    float64 `json:"fmeasure"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Candidate == candidate && c.Reference == reference {
			return c.F
		}
	}
	t.Fatalf("no expected ROUGE-1 for %q / %q in testdata/rouge_expected.json", candidate, reference)
	return 0
}

// TestScoreCaseOverRepeats scores the two_cities case of an ADK eval file
// over two repeats. Repeat 1 calls the tools in the other order and words
// the answers differently; repeat 2 does exactly what is expected.
// Trajectory per invocation: repeat 1 = [0, 1] under EXACT and IN_ORDER,
// [1, 1] under ANY_ORDER; repeat 2 = [1, 1]; the case's score is the mean
// of all four (ADK's AgentEvaluator averages the invocations of all runs):
// 0.75, 0.75 and 1.0. ROUGE-1 from the script's values: repeat 1 is
// F("Paris is sunny, Oslo is cold.") and F("You're welcome!"), repeat 2
// is 1 and 1.
func TestScoreCaseOverRepeats(t *testing.T) {
	data, err := os.ReadFile("testdata/weather.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load("weather.evalset.json", data)
	if err != nil {
		t.Fatal(err)
	}
	c := set.EvalCases[0]
	text := func(s string) *Content { return &Content{Role: "model", Parts: []Part{{Text: s}}} }
	tools := c.Conversation[0].IntermediateData.ToolUses
	repeat1 := []Invocation{
		{FinalResponse: text("Paris is sunny, Oslo is cold."), IntermediateData: &IntermediateData{ToolUses: []FunctionCall{tools[1], tools[0]}}},
		{FinalResponse: text("You're welcome!")},
	}
	repeat2 := []Invocation{c.Conversation[0], c.Conversation[1]}
	criteria := []Criterion{
		{Metric: MetricToolTrajectory, Threshold: 0.8, MatchType: MatchExact},
		{Metric: MetricToolTrajectory, Threshold: 0.8, MatchType: MatchInOrder},
		{Metric: MetricToolTrajectory, Threshold: 0.8, MatchType: MatchAnyOrder},
		{Metric: MetricResponseMatch, Threshold: 0.8},
	}
	got := ScoreCase(context.Background(), c, [][]Invocation{repeat1, repeat2}, criteria, nil)
	f1 := rougeF(t, "Paris is sunny, Oslo is cold.", "Paris is sunny and Oslo is cold.")
	f2 := rougeF(t, "You're welcome!", "You are welcome.")
	wantRouge := (f1 + f2 + 1 + 1) / 4
	want := []struct {
		score  float64
		passed bool
	}{{0.75, false}, {0.75, false}, {1, true}, {wantRouge, wantRouge >= 0.8}}
	for i, w := range want {
		if !near(got[i].Score, w.score) || got[i].Passed != w.passed {
			t.Errorf("criterion %d (%s %s): score %v passed %v, want %v %v", i, criteria[i].Metric, criteria[i].MatchType, got[i].Score, got[i].Passed, w.score, w.passed)
		}
	}
}

func TestLoadFormats(t *testing.T) {
	data, err := os.ReadFile("testdata/weather.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err := Load("weather.evalset.json", data)
	if err != nil {
		t.Fatal(err)
	}
	camel := set.EvalCases[1]
	if camel.EvalID != "camel_case" || camel.SessionInput.AppName != "dice" || camel.SessionInput.State["lastRoll"] == nil ||
		camel.Conversation[0].IntermediateData.ToolUses[0].Args["numSides"] == nil {
		t.Errorf("camelCase aliases not read, or free-form keys changed: %+v", camel)
	}
	old, err := os.ReadFile("testdata/old_format.test.json")
	if err != nil {
		t.Fatal(err)
	}
	set, err = Load("old_format.test.json", old)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.EvalCases) != 1 || len(set.EvalCases[0].Conversation) != 2 ||
		set.EvalCases[0].Conversation[0].IntermediateData.ToolUses[0].Name != "roll_die" ||
		set.EvalCases[0].Conversation[1].FinalResponse.Text() != "I can roll dice." {
		t.Errorf("old .test.json read as %+v", set)
	}
	for _, bad := range []string{`{}`, `{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[]}]}`, `[]`, `nope`,
		`{"eval_set_id":"x","eval_cases":[{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"hi"}]}}]},{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"hi"}]}}]}]}`} {
		if _, err := Load("bad.json", []byte(bad)); err == nil {
			t.Errorf("Load(%s) succeeded", bad)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	data, err := os.ReadFile("testdata/test_config.json")
	if err != nil {
		t.Fatal(err)
	}
	crit, err := LoadConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by name: response_match_score, rubric_based..., tool_trajectory...
	if len(crit) != 3 || crit[1].Metric != MetricRubricResponse || crit[1].JudgeModel != "judge" || len(crit[1].Rubrics) != 2 ||
		crit[0].Metric != MetricResponseMatch || crit[0].Threshold != 0.6 ||
		crit[2].Metric != MetricToolTrajectory || crit[2].MatchType != MatchInOrder || crit[2].Threshold != 0.5 {
		t.Errorf("criteria = %+v", crit)
	}
	for _, bad := range []string{`{"criteria":{"safety_v1":0.5}}`, `{"criteria":{"made_up":1}}`, `{}`,
		`{"criteria":{"tool_trajectory_avg_score":{"match_type":"SOMETIMES","threshold":1}}}`} {
		_, err := LoadConfig([]byte(bad))
		if err == nil {
			t.Errorf("LoadConfig(%s) succeeded", bad)
		} else if strings.Contains(bad, "safety") && !strings.Contains(err.Error(), "not supported") {
			t.Errorf("LoadConfig(%s): %v does not say it is not supported", bad, err)
		}
	}
}
