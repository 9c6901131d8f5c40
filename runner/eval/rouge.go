package eval

import "strings"

// RougeScore is ROUGE-1 of a response against a reference.
type RougeScore struct {
	Precision, Recall, FMeasure float64
}

// Rouge1 scores candidate against reference as adk-python's
// response_match_score does: rouge_score's RougeScorer(["rouge1"],
// use_stemmer=True).score(reference, candidate). Both texts are tokenized
// by rougeTokens; the overlap is the sum over reference tokens of the
// smaller of the two counts; precision divides it by the candidate's token
// count, recall by the reference's (each at least 1), and the F-measure is
// their harmonic mean, or 0 when both are 0.
func Rouge1(candidate, reference string) RougeScore {
	ref := countTokens(rougeTokens(reference))
	cand := countTokens(rougeTokens(candidate))
	overlap, nref, ncand := 0, 0, 0
	for tok, n := range ref {
		overlap += min(n, cand[tok])
		nref += n
	}
	for _, n := range cand {
		ncand += n
	}
	p := float64(overlap) / float64(max(ncand, 1))
	r := float64(overlap) / float64(max(nref, 1))
	f := 0.0
	if p+r > 0 {
		f = 2 * p * r / (p + r)
	}
	return RougeScore{Precision: p, Recall: r, FMeasure: f}
}

func countTokens(toks []string) map[string]int {
	m := make(map[string]int, len(toks))
	for _, t := range toks {
		m[t]++
	}
	return m
}

// rougeTokens is rouge_score's default tokenizer with the stemmer on:
// lowercase, every run of characters outside [a-z0-9] becomes a space,
// split on whitespace, Porter-stem the tokens longer than 3 characters,
// keep the non-empty tokens of [a-z0-9] only.
func rougeTokens(text string) []string {
	text = strings.ToLower(text)
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	fields := strings.Fields(b.String())
	out := fields[:0]
	for _, f := range fields {
		if len(f) > 3 {
			f = porterStem(f)
		}
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}
