package apps

import (
	"fmt"
	"regexp"
	"strings"
)

// secretShapes are the shapes of secrets people paste where the name of an
// environment variable goes, most specific first (an Anthropic key also
// starts with sk-). Only the kind is ever shown: the value itself must
// not reach a log, an error or a client.
var secretShapes = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`^sk-ant-`), "an Anthropic API key"},
	{regexp.MustCompile(`^sk-`), "an OpenAI API key"},
	{regexp.MustCompile(`^AIza[0-9A-Za-z_-]{16,}`), "a Gemini (Google) API key"},
	{regexp.MustCompile(`^(ghp|gho|ghs|ghu|ghr|github_pat)_`), "a GitHub token"},
	{regexp.MustCompile(`^xox[abposr]-`), "a Slack token"},
	{regexp.MustCompile(`^(AKIA|ASIA)[0-9A-Z]{12,}`), "an AWS access key id"},
	{regexp.MustCompile(`^hf_[0-9A-Za-z]{16,}`), "a Hugging Face token"},
	{regexp.MustCompile(`^eyJ[0-9A-Za-z_-]+\.`), "a JSON Web Token"},
	{regexp.MustCompile(`(?i)^bearer\s`), "a bearer token"},
	{regexp.MustCompile(`-----BEGIN`), "a PEM key or certificate"},
	{regexp.MustCompile(`://`), "a URL"},
}

// secretLike says what kind of secret s looks like, or "" when it looks
// like none. Besides the known shapes, a long mix of lower case, upper
// case and digits without an underscore is taken for a key: environment
// variable names are words, not noise.
func secretLike(s string) string {
	for _, sh := range secretShapes {
		if sh.re.MatchString(s) {
			return sh.kind
		}
	}
	if len(s) >= 24 && !strings.Contains(s, "_") && strings.ContainsAny(s, "0123456789") &&
		strings.ToUpper(s) != s && strings.ToLower(s) != s {
		return "an API key or token"
	}
	return ""
}

// checkEnvName checks a value that must be the name of an environment
// variable. Its error never shows the value, which may be the secret
// itself pasted in the wrong place.
func checkEnvName(value, path string) *Error {
	if kind := secretLike(value); kind != "" {
		return &Error{Path: path, Msg: fmt.Sprintf("this looks like %s, not the name of an environment variable: "+
			"put the secret in an environment variable and give its name here (the value is not shown)", kind)}
	}
	if !envName.MatchString(value) {
		return &Error{Path: path, Msg: "want the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*); " +
			"the value is not shown, as it may be a secret"}
	}
	return nil
}

// headerName matches an HTTP header name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// checkMCPSecrets checks the fields of an MCP server that name environment
// variables: header_env ("Header-Name=ENV_VAR") and the names in env
// ("NAME=value", whose values are the file's own and are never shown).
func checkMCPSecrets(headerEnv, env []string, path string) []*Error {
	var errs []*Error
	for i, h := range headerEnv {
		p := fmt.Sprintf("%s.header_env[%d]", path, i)
		name, variable, ok := strings.Cut(h, "=")
		switch {
		case !ok || !headerName.MatchString(name):
			errs = append(errs, &Error{Path: p, Msg: "want Header-Name=ENV_VAR, the variable holding the header's value (the value is not shown, as it may be a secret)"})
		default:
			if err := checkEnvName(variable, p); err != nil {
				err.Msg = "after " + name + "=: " + err.Msg
				errs = append(errs, err)
			}
		}
	}
	for i, e := range env {
		p := fmt.Sprintf("%s.env[%d]", path, i)
		name, _, ok := strings.Cut(e, "=")
		if !ok || !envName.MatchString(name) {
			errs = append(errs, &Error{Path: p, Msg: "want NAME=value with NAME an environment variable name (the value is not shown, as it may be a secret)"})
		}
	}
	return errs
}
