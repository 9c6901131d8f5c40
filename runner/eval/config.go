package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The metric names of ADK's test_config.json criteria that are scored here.
const (
	// MetricToolTrajectory is ADK's tool_trajectory_avg_score.
	MetricToolTrajectory = "tool_trajectory_avg_score"
	// MetricResponseMatch is ADK's response_match_score (ROUGE-1 F-measure).
	MetricResponseMatch = "response_match_score"
	// MetricRubricResponse is ADK's rubric_based_final_response_quality_v1:
	// a judge model checks the final response against rubrics.
	MetricRubricResponse = "rubric_based_final_response_quality_v1"
)

// unsupported are ADK metric names that are known but not scored here, with
// why, so a config that names them is refused with a reason.
var unsupported = map[string]string{
	"response_evaluation_score":          "it needs Vertex AI's evaluation service",
	"final_response_match_v2":            "its judge prompt is ADK's own; use rubric_based_final_response_quality_v1",
	"safety_v1":                          "it needs Vertex AI's evaluation service",
	"hallucinations_v1":                  "not implemented",
	"rubric_based_tool_use_quality_v1":   "not implemented",
	"per_turn_user_simulator_quality_v1": "simulated users (conversation_scenario) are not supported",
}

// Criterion is one metric with its threshold: a case passes the metric
// when its score is at least Threshold.
type Criterion struct {
	Metric     string
	Threshold  float64
	MatchType  MatchType // tool trajectory only; EXACT when unset
	IgnoreArgs bool      // tool trajectory only
	Rubrics    []Rubric  // rubric-based only
	JudgeModel string    // rubric-based only: a model of the apps file
	NumSamples int       // rubric-based only: judge calls per invocation
}

// Rubric is one property the judge checks (ADK's Rubric).
type Rubric struct {
	ID   string `json:"rubric_id"`
	Text string `json:"text"`
}

// DefaultCriteria are ADK's defaults when there is no test_config.json:
// tool trajectory 1.0 and response match 0.8.
func DefaultCriteria() []Criterion {
	return []Criterion{
		{Metric: MetricToolTrajectory, Threshold: 1.0, MatchType: MatchExact},
		{Metric: MetricResponseMatch, Threshold: 0.8},
	}
}

// criterionJSON is a criterion written as an object (ADK's BaseCriterion,
// ToolTrajectoryCriterion, RubricsBasedCriterion), after normalizeKeys.
type criterionJSON struct {
	Threshold         *float64 `json:"threshold"`
	MatchType         string   `json:"match_type"`
	IgnoreArgs        bool     `json:"ignore_args"`
	JudgeModelOptions *struct {
		JudgeModel string `json:"judge_model"`
		NumSamples int    `json:"num_samples"`
	} `json:"judge_model_options"`
	Rubrics []struct {
		RubricID      string `json:"rubric_id"`
		RubricContent struct {
			TextProperty string `json:"text_property"`
		} `json:"rubric_content"`
	} `json:"rubrics"`
}

// LoadConfig reads ADK's test_config.json: {"criteria": {metric: threshold
// or criterion object}}. Metrics not scored here are refused by name.
func LoadConfig(data []byte) ([]Criterion, error) {
	var raw struct {
		Criteria map[string]json.RawMessage `json:"criteria"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: test_config.json: %w", ErrInvalid, err)
	}
	if raw.Criteria == nil {
		return nil, fmt.Errorf("%w: test_config.json: no \"criteria\" object", ErrInvalid)
	}
	var out []Criterion
	for _, name := range slices.Sorted(maps.Keys(raw.Criteria)) {
		c, err := parseCriterion(name, raw.Criteria[name])
		if err != nil {
			return nil, fmt.Errorf("%w: test_config.json: criteria %q: %w", ErrInvalid, name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parseCriterion(name string, v json.RawMessage) (Criterion, error) {
	if why, ok := unsupported[name]; ok {
		return Criterion{}, fmt.Errorf("metric not supported: %s", why)
	}
	if name != MetricToolTrajectory && name != MetricResponseMatch && name != MetricRubricResponse {
		return Criterion{}, fmt.Errorf("unknown metric (supported: %s, %s, %s)", MetricToolTrajectory, MetricResponseMatch, MetricRubricResponse)
	}
	c := Criterion{Metric: name, MatchType: MatchExact}
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] != '{' {
		if err := json.Unmarshal(t, &c.Threshold); err != nil {
			return Criterion{}, fmt.Errorf("want a number or an object: %w", err)
		}
		if name == MetricRubricResponse {
			return Criterion{}, fmt.Errorf("needs rubrics and judge_model_options (an object)")
		}
		return c, nil
	}
	var raw any
	if err := json.Unmarshal(v, &raw); err != nil {
		return Criterion{}, err
	}
	var cj criterionJSON
	if err := decodeNormalized(raw, &cj); err != nil {
		return Criterion{}, err
	}
	if cj.Threshold == nil {
		return Criterion{}, fmt.Errorf("threshold is missing")
	}
	c.Threshold, c.IgnoreArgs = *cj.Threshold, cj.IgnoreArgs
	if cj.MatchType != "" {
		c.MatchType = MatchType(strings.ToUpper(cj.MatchType))
		if !slices.Contains([]MatchType{MatchExact, MatchInOrder, MatchAnyOrder}, c.MatchType) {
			return Criterion{}, fmt.Errorf("match_type %q: want EXACT, IN_ORDER or ANY_ORDER", cj.MatchType)
		}
	}
	if name == MetricRubricResponse {
		if cj.JudgeModelOptions == nil || cj.JudgeModelOptions.JudgeModel == "" {
			return Criterion{}, fmt.Errorf("judge_model_options.judge_model is missing: name a model of the apps file")
		}
		c.JudgeModel, c.NumSamples = cj.JudgeModelOptions.JudgeModel, max(cj.JudgeModelOptions.NumSamples, 1)
		for _, r := range cj.Rubrics {
			c.Rubrics = append(c.Rubrics, Rubric{ID: r.RubricID, Text: r.RubricContent.TextProperty})
		}
		if len(c.Rubrics) == 0 {
			return Criterion{}, fmt.Errorf("rubrics are missing")
		}
	}
	return c, nil
}
