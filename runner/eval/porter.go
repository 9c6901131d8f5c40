package eval

import "strings"

// porterStem stems a lowercase ASCII word the way NLTK's PorterStemmer does
// in its default mode (NLTK_EXTENSIONS, nltk 3.8), which is the stemmer
// rouge_score's tokenizer uses: Porter's 1980 algorithm with NLTK's
// departures (a table of irregular forms, "ies"/"ied" on four-letter
// words, y -> i only after a consonant that is not the whole stem, "bli",
// "fulli" and "logi" in step 2, and the two-letter *o condition).
func porterStem(word string) string {
	if s, ok := porterIrregular[word]; ok {
		return s
	}
	if len(word) <= 2 {
		return word
	}
	w := porterStep1a(word)
	w = porterStep1b(w)
	w = porterStep1c(w)
	w = porterStep2(w)
	w = porterStep3(w)
	w = porterStep4(w)
	w = porterStep5a(w)
	return porterStep5b(w)
}

// porterIrregular maps NLTK's irregular forms to their stems.
var porterIrregular = map[string]string{
	"sky": "sky", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"news": "news", "innings": "inning", "inning": "inning", "outings": "outing",
	"outing": "outing", "cannings": "canning", "canning": "canning", "howe": "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

func isVowelLetter(c byte) bool { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' }

// isConsonant is Porter's definition: not a vowel, and y only when it
// follows a vowel (or starts the word).
func isConsonant(w string, i int) bool {
	if isVowelLetter(w[i]) {
		return false
	}
	if w[i] == 'y' {
		return i == 0 || !isConsonant(w, i-1)
	}
	return true
}

// measure is m in [C](VC){m}[V].
func measure(stem string) int {
	m := 0
	for i := 1; i < len(stem); i++ {
		if !isConsonant(stem, i-1) && isConsonant(stem, i) {
			m++
		}
	}
	return m
}

func positiveMeasure(stem string) bool { return measure(stem) > 0 }

func measureOver1(stem string) bool { return measure(stem) > 1 }

func containsVowel(stem string) bool {
	for i := range len(stem) {
		if !isConsonant(stem, i) {
			return true
		}
	}
	return false
}

func endsDoubleConsonant(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && isConsonant(w, n-1)
}

// endsCVC is *o, with NLTK's extension for two-letter stems.
func endsCVC(w string) bool {
	n := len(w)
	if n >= 3 && isConsonant(w, n-3) && !isConsonant(w, n-2) && isConsonant(w, n-1) &&
		w[n-1] != 'w' && w[n-1] != 'x' && w[n-1] != 'y' {
		return true
	}
	return n == 2 && !isConsonant(w, 0) && isConsonant(w, 1)
}

// rule is one suffix rule: the first rule whose suffix the word ends with
// decides, whether or not its condition holds (NLTK's _apply_rule_list).
type rule struct {
	suffix, repl string
	cond         func(stem string) bool
}

func applyRules(w string, rules []rule) string {
	for _, r := range rules {
		if strings.HasSuffix(w, r.suffix) {
			stem := w[:len(w)-len(r.suffix)]
			if r.cond == nil || r.cond(stem) {
				return stem + r.repl
			}
			return w
		}
	}
	return w
}

func porterStep1a(w string) string {
	if strings.HasSuffix(w, "ies") && len(w) == 4 {
		return w[:len(w)-3] + "ie"
	}
	return applyRules(w, []rule{{"sses", "ss", nil}, {"ies", "i", nil}, {"ss", "ss", nil}, {"s", "", nil}})
}

func porterStep1b(w string) string {
	if strings.HasSuffix(w, "ied") {
		if len(w) == 4 {
			return w[:len(w)-3] + "ie"
		}
		return w[:len(w)-3] + "i"
	}
	if strings.HasSuffix(w, "eed") {
		stem := w[:len(w)-3]
		if measure(stem) > 0 {
			return stem + "ee"
		}
		return w
	}
	stem, ok := "", false
	for _, suf := range []string{"ed", "ing"} {
		if strings.HasSuffix(w, suf) && containsVowel(w[:len(w)-len(suf)]) {
			stem, ok = w[:len(w)-len(suf)], true
			break
		}
	}
	if !ok {
		return w
	}
	for _, r := range []rule{{"at", "ate", nil}, {"bl", "ble", nil}, {"iz", "ize", nil}} {
		if strings.HasSuffix(stem, r.suffix) {
			return stem[:len(stem)-len(r.suffix)] + r.repl
		}
	}
	if endsDoubleConsonant(stem) {
		last := stem[len(stem)-1]
		if last != 'l' && last != 's' && last != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	}
	if measure(stem) == 1 && endsCVC(stem) {
		return stem + "e"
	}
	return stem
}

func porterStep1c(w string) string {
	return applyRules(w, []rule{{"y", "i", func(stem string) bool {
		return len(stem) > 1 && isConsonant(stem, len(stem)-1)
	}}})
}

func porterStep2(w string) string {
	if strings.HasSuffix(w, "alli") && positiveMeasure(w[:len(w)-4]) {
		return porterStep2(w[:len(w)-4] + "al")
	}
	rules := []rule{
		{"ational", "ate", positiveMeasure}, {"tional", "tion", positiveMeasure},
		{"enci", "ence", positiveMeasure}, {"anci", "ance", positiveMeasure},
		{"izer", "ize", positiveMeasure}, {"bli", "ble", positiveMeasure},
		{"alli", "al", positiveMeasure}, {"entli", "ent", positiveMeasure},
		{"eli", "e", positiveMeasure}, {"ousli", "ous", positiveMeasure},
		{"ization", "ize", positiveMeasure}, {"ation", "ate", positiveMeasure},
		{"ator", "ate", positiveMeasure}, {"alism", "al", positiveMeasure},
		{"iveness", "ive", positiveMeasure}, {"fulness", "ful", positiveMeasure},
		{"ousness", "ous", positiveMeasure}, {"aliti", "al", positiveMeasure},
		{"iviti", "ive", positiveMeasure}, {"biliti", "ble", positiveMeasure},
		{"fulli", "ful", positiveMeasure},
		// NLTK tests the measure of the word less three letters, not of the
		// stem less "logi".
		{"logi", "log", func(string) bool { return positiveMeasure(w[:len(w)-3]) }},
	}
	return applyRules(w, rules)
}

func porterStep3(w string) string {
	return applyRules(w, []rule{
		{"icate", "ic", positiveMeasure}, {"ative", "", positiveMeasure},
		{"alize", "al", positiveMeasure}, {"iciti", "ic", positiveMeasure},
		{"ical", "ic", positiveMeasure}, {"ful", "", positiveMeasure},
		{"ness", "", positiveMeasure},
	})
}

func porterStep4(w string) string {
	return applyRules(w, []rule{
		{"al", "", measureOver1}, {"ance", "", measureOver1}, {"ence", "", measureOver1},
		{"er", "", measureOver1}, {"ic", "", measureOver1}, {"able", "", measureOver1},
		{"ible", "", measureOver1}, {"ant", "", measureOver1}, {"ement", "", measureOver1},
		{"ment", "", measureOver1}, {"ent", "", measureOver1},
		{"ion", "", func(stem string) bool {
			return measure(stem) > 1 && (stem[len(stem)-1] == 's' || stem[len(stem)-1] == 't')
		}},
		{"ou", "", measureOver1}, {"ism", "", measureOver1}, {"ate", "", measureOver1},
		{"iti", "", measureOver1}, {"ous", "", measureOver1}, {"ive", "", measureOver1},
		{"ize", "", measureOver1},
	})
}

func porterStep5a(w string) string {
	if !strings.HasSuffix(w, "e") {
		return w
	}
	stem := w[:len(w)-1]
	if m := measure(stem); m > 1 || (m == 1 && !endsCVC(stem)) {
		return stem
	}
	return w
}

func porterStep5b(w string) string {
	return applyRules(w, []rule{{"ll", "l", func(string) bool { return measure(w[:len(w)-1]) > 1 }}})
}
