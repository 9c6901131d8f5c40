package eval

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
)

// scripted is a judge model that answers each call with the next answer.
type scripted struct {
	answers []string
	prompts []string
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		s.prompts = append(s.prompts, req.Contents[0].GetParts()[0].GetText())
		if len(s.answers) == 0 {
			yield(nil, errors.New("no more answers"))
			return
		}
		a := s.answers[0]
		s.answers = s.answers[1:]
		yield(&model.Response{TurnComplete: true, Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: a}}}}}, nil)
	}
}

var rubrics = []Rubric{{ID: "polite", Text: "The response is polite."}, {ID: "city", Text: "The response names the city."}}

func verdicts(polite, city string) string {
	return "Property: The response is polite.\nRationale: r\nVerdict: " + polite +
		"\n\nProperty:  the response names the CITY. \nRationale: r\nVerdict: " + city + "\n"
}

func TestModelJudgeScores(t *testing.T) {
	inv := Invocation{UserContent: &Content{Parts: []Part{{Text: "Weather in Oslo?"}}}}
	actual := Invocation{FinalResponse: &Content{Parts: []Part{{Text: "Oslo is cold, sorry."}}}}
	tests := []struct {
		name    string
		samples int
		answers []string
		want    float64
		err     error
	}{
		{"both yes", 1, []string{verdicts("Yes", "yes.")}, 1, nil},
		{"one of two", 1, []string{verdicts("yes", "No")}, 0.5, nil},
		// Majority per rubric over 3 samples: polite 2 yes of 3, city 1 of 3.
		{"majority", 3, []string{verdicts("yes", "yes"), verdicts("no", "no"), verdicts("yes", "no")}, 0.5, nil},
		// A tie is no: polite 1-1, city 2-0.
		{"tie is no", 2, []string{verdicts("yes", "yes"), verdicts("no", "yes")}, 0.5, nil},
		// A verdict with neither yes nor no scores nothing: only city counts.
		{"unscored rubric", 1, []string{verdicts("maybe", "yes")}, 1, nil},
		{"nothing parsable", 1, []string{"I think it is fine."}, 0, ErrNoVerdict},
	}
	for _, tt := range tests {
		m := &scripted{answers: tt.answers}
		j := ModelJudge{Model: func(context.Context, string) (model.Model, error) { return m, nil }}
		got, err := j.Judge(t.Context(), Criterion{Metric: MetricRubricResponse, Rubrics: rubrics, NumSamples: tt.samples, JudgeModel: "j"}, actual, inv)
		if !errors.Is(err, tt.err) || got != tt.want {
			t.Errorf("%s: %v, %v; want %v, %v", tt.name, got, err, tt.want, tt.err)
		}
		if len(m.prompts) != tt.samples || !strings.Contains(m.prompts[0], "Oslo is cold, sorry.") ||
			!strings.Contains(m.prompts[0], "Weather in Oslo?") || !strings.Contains(m.prompts[0], "- The response names the city.") {
			t.Errorf("%s: %d prompts, first %q", tt.name, len(m.prompts), m.prompts)
		}
	}
}
