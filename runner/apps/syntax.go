package apps

import (
	"bytes"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
)

// yamlPrefix is what yaml.v3 puts before its messages: its own idea of
// the line, which is where the enclosing block began rather than where
// the problem is.
var yamlPrefix = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// maxLocateLines bounds the documents whose syntax errors are located by
// reparsing: each line costs a parse of the lines before it.
const maxLocateLines = 2000

// syntaxError turns a YAML decoding error into an *Error at the line and
// column of the problem. yaml.v3 reports the line where the enclosing
// block began (an indentation slip on line 5 of an apps list that starts
// on line 1 comes out at line 1), so the place is found as the shortest
// prefix of the document that fails with the same message: first in whole
// lines, then in bytes of the last line.
func syntaxError(name string, data []byte, err error) *Error {
	msg := yamlPrefix.ReplaceAllString(err.Error(), "")
	e := &Error{File: name, Msg: "not valid YAML or JSON: " + msg}
	if m := yamlPrefix.FindStringSubmatch(err.Error()); m != nil && m[1] != "" {
		e.Line, _ = strconv.Atoi(m[1])
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxLocateLines {
		return e
	}
	var before []byte
	for i, line := range lines {
		if !failsWith(append(before[:len(before):len(before)], line...), msg) {
			before = append(before, line...)
			continue
		}
		e.Line, e.Col = i+1, 0
		for c := 1; c <= len(line); c++ {
			if failsWith(append(before[:len(before):len(before)], line[:c]...), msg) {
				e.Col = c
				break
			}
		}
		break
	}
	return e
}

// failsWith reports whether decoding doc fails with msg.
func failsWith(doc []byte, msg string) bool {
	var n yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(doc)).Decode(&n)
	return err != nil && yamlPrefix.ReplaceAllString(err.Error(), "") == msg
}
