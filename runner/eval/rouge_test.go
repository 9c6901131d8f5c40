package eval

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

// The expected values in testdata/rouge_expected.json and
// testdata/porter_expected.txt are computed by testdata/expected_scores.py
// from the metric's definition (rouge_score's tokenizer and ROUGE-1
// written out in Python, NLTK 3.8's PorterStemmer from Debian's
// python3-nltk), not by this package; see that script to regenerate them.

func TestPorterStemMatchesNLTK(t *testing.T) {
	f, err := os.Open("testdata/porter_expected.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		word, want, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		if got := porterStem(word); got != want {
			t.Errorf("porterStem(%q) = %q, NLTK says %q", word, got, want)
		}
		n++
	}
	if n < 1000 {
		t.Fatalf("only %d words checked", n)
	}
}

func TestRouge1MatchesDefinition(t *testing.T) {
	data, err := os.ReadFile("testdata/rouge_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Candidate, Reference        string
		Precision, Recall, FMeasure float64 `json:"-"`
		P                           float64 `json:"precision"`
		R                           float64 `json:"recall"`
		F                           float64 `json:"fmeasure"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		got := Rouge1(c.Candidate, c.Reference)
		if !near(got.Precision, c.P) || !near(got.Recall, c.R) || !near(got.FMeasure, c.F) {
			t.Errorf("Rouge1(%q, %q) = %+v, want P=%v R=%v F=%v", c.Candidate, c.Reference, got, c.P, c.R, c.F)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
