package eval

import (
	"context"
	"fmt"
)

// Judge scores one actual invocation against rubrics with a judge model:
// the share of rubrics the response meets, in [0, 1].
type Judge interface {
	Judge(ctx context.Context, c Criterion, actual, expected Invocation) (float64, error)
}

// MetricResult is one metric's verdict on one case over all its repeats.
type MetricResult struct {
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	// Score is the mean of the per-invocation scores of every repeat (as
	// ADK's AgentEvaluator averages the invocations of all its runs).
	Score float64 `json:"score"`
	// PerInvocation holds the scores of each repeat's invocations.
	PerInvocation [][]float64 `json:"per_invocation"`
	Passed        bool        `json:"passed"`
	// Error says why the metric could not be scored (it then fails).
	Error string `json:"error,omitempty"`
}

// ScoreCase scores the actual invocations of each repeat of a case against
// its conversation under each criterion. A repeat with fewer invocations
// than the conversation (a run that failed) is scored on what it has, as
// ADK zips the two lists; the caller fails such a repeat on its own. judge
// may be nil when no criterion needs it.
func ScoreCase(ctx context.Context, c EvalCase, repeats [][]Invocation, criteria []Criterion, judge Judge) []MetricResult {
	out := make([]MetricResult, 0, len(criteria))
	for _, cr := range criteria {
		mr := MetricResult{Metric: cr.Metric, Threshold: cr.Threshold}
		total, n := 0.0, 0
		for _, actual := range repeats {
			var scores []float64
			for i := range min(len(actual), len(c.Conversation)) {
				s, err := scoreInvocation(ctx, cr, actual[i], c.Conversation[i], judge)
				if err != nil && mr.Error == "" {
					mr.Error = err.Error()
				}
				scores = append(scores, s)
				total += s
				n++
			}
			mr.PerInvocation = append(mr.PerInvocation, scores)
		}
		if n > 0 {
			mr.Score = total / float64(n)
		}
		mr.Passed = n > 0 && mr.Error == "" && mr.Score >= cr.Threshold
		out = append(out, mr)
	}
	return out
}

func scoreInvocation(ctx context.Context, cr Criterion, actual, expected Invocation, judge Judge) (float64, error) {
	switch cr.Metric {
	case MetricToolTrajectory:
		if TrajectoryMatch(cr.MatchType, actual.IntermediateData.ToolCalls(), expected.IntermediateData.ToolCalls(), cr.IgnoreArgs) {
			return 1, nil
		}
		return 0, nil
	case MetricResponseMatch:
		return Rouge1(actual.FinalResponse.Text(), expected.FinalResponse.Text()).FMeasure, nil
	case MetricRubricResponse:
		if judge == nil {
			return 0, fmt.Errorf("%s: no judge model", cr.Metric)
		}
		return judge.Judge(ctx, cr, actual, expected)
	}
	return 0, fmt.Errorf("metric %q is not supported", cr.Metric)
}
