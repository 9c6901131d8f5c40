package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentrunner/agentrunner/"

// importRules says, for each package under runner/ (and for store), which
// packages of this module it must not import directly. Each package's doc
// comment states the same rule; this test keeps the two honest. The
// transitive rule against gRPC is .ci/run's deps step.
var importRules = map[string][]string{
	"runner":                               {"runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model/", "server", "cmd", "examples"},
	"runner/agent":                         {"runner", "runner/agent/", "runner/tool", "runner/plugin", "runner/apps", "runner/model", "runner/internal/history", "server", "cmd", "examples"},
	"runner/agent/llmagent":                {"runner", "runner/agent/workflow", "runner/plugin", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/agent/workflow":                {"runner", "runner/agent/llmagent", "runner/tool", "runner/model", "runner/plugin", "runner/apps", "runner/internal/history", "server", "cmd", "examples"},
	"runner/agent/remotea2a":               {"runner", "runner/agent/llmagent", "runner/agent/workflow", "runner/tool", "runner/plugin", "runner/apps", "runner/model", "runner/model/", "runner/internal/", "server", "cmd", "examples"},
	"runner/agent/remotea2a/remotea2atest": {"runner", "runner/", "server", "cmd", "examples"},
	"runner/tool":                          {"runner", "runner/agent/", "runner/plugin", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/tool/builtin":                  {"runner", "runner/agent/", "runner/plugin", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/tool/mcptool":                  {"runner", "runner/agent/", "runner/plugin", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/plugin/telemetry":              {"runner", "runner/agent/", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/plugin":                        {"runner", "runner/agent/", "runner/apps", "runner/model/", "runner/internal/history", "server", "cmd", "examples"},
	"runner/memory":                        {"runner", "runner/", "server", "cmd", "examples"},
	"runner/model":                         {"runner", "runner/agent", "runner/tool", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "store", "server", "cmd", "examples"},
	"runner/model/gemini":                  {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/offline", "runner/model/openai", "runner/model/anthropic", "runner/model/retry", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/offline":                 {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/gemini", "runner/model/openai", "runner/model/anthropic", "runner/model/retry", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/openai":                  {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/offline", "runner/model/gemini", "runner/model/anthropic", "runner/model/retry", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/anthropic":               {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/offline", "runner/model/gemini", "runner/model/openai", "runner/model/retry", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/retry":                   {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/offline", "runner/model/gemini", "runner/model/openai", "runner/model/anthropic", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/internal/providertest":   {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "runner/model/offline", "runner/model/gemini", "runner/model/openai", "runner/model/anthropic", "runner/model/providers", "store", "server", "cmd", "examples"},
	"runner/model/providers":               {"runner", "runner/agent", "runner/agent/", "runner/tool", "runner/tool/", "runner/plugin", "runner/memory", "runner/apps", "runner/internal/", "store", "server", "cmd", "examples"},
	"runner/apps":                          {"runner/model/", "server", "cmd", "examples"},
	"runner/internal/history":              {"runner", "runner/", "server", "cmd", "examples"},
	// The rooms of the run machinery (issue 33): the record's rules know
	// records and events; live runs know their log; the turn knows its
	// Env and Sink; the replicas know live runs and their Host. None of
	// them reaches back up into the runner, nor into a room above it.
	"runner/internal/runrec":  {"runner", "runner/internal/", "runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model", "runner/plugin", "runner/memory", "server", "cmd", "examples"},
	"runner/internal/live":    {"runner", "runner/internal/turn", "runner/internal/replica", "runner/internal/history", "runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model", "runner/tool", "runner/plugin", "runner/memory", "server", "cmd", "examples"},
	"runner/internal/turn":    {"runner", "runner/internal/replica", "runner/internal/live", "runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model/", "server", "cmd", "examples"},
	"runner/internal/replica": {"runner", "runner/internal/turn", "runner/internal/history", "runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model", "runner/tool", "runner/plugin", "runner/memory", "server", "cmd", "examples"},
	"runner/internal/seal":    {""},
	// Budgets know spend, the store's reader of it, and agents' errors.
	"runner/internal/budget": {"runner", "runner/internal/", "runner/apps", "runner/agent/llmagent", "runner/agent/workflow", "runner/model", "runner/model/", "runner/tool", "runner/plugin", "runner/memory", "server", "cmd", "examples"},
}

// sdkOwners names, for each model provider's SDK, the one package that may
// import it: the provider converts to and from the SDK's types at its own
// boundary, so nothing else depends on them.
var sdkOwners = map[string]string{
	"google.golang.org/genai":                "runner/model/gemini",
	"github.com/openai/openai-go":            "runner/model/openai",
	"github.com/anthropics/anthropic-sdk-go": "runner/model/anthropic",
}

// storeRule holds for store and every package under it: storage never
// depends on the runner.
var storeRule = []string{"runner", "runner/", "server", "cmd", "examples"}

// forbidden reports whether imp (module-relative) falls under rule: equal
// to it, or, for a rule ending in "/", under it.
func forbidden(imp, rule string) bool {
	if rule == "" {
		return true
	}
	if strings.HasSuffix(rule, "/") {
		return strings.HasPrefix(imp, rule)
	}
	return imp == rule
}

func TestImportRules(t *testing.T) {
	root := ".."
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if !strings.HasPrefix(rel, "runner") && !strings.HasPrefix(rel, "store") {
			return nil
		}
		imports, doc, hasGo := directImports(t, path)
		if !hasGo {
			return nil
		}
		rules, ok := importRules[rel]
		switch {
		case strings.HasPrefix(rel, "store"):
			rules = storeRule
		case !ok:
			t.Errorf("package %s has no import rule: add it to importRules and say the rule in its doc comment", rel)
			return nil
		case !strings.Contains(doc, "must not import") && !strings.Contains(doc, "must import nothing"):
			t.Errorf("package %s: its doc comment does not say what it must not import", rel)
		}
		seen[rel] = true
		for _, imp := range imports {
			if strings.HasPrefix(imp, "google.golang.org/grpc") {
				t.Errorf("%s imports %s: gRPC lives in server and cmd", rel, imp)
			}
			for sdk, owner := range sdkOwners {
				if strings.HasPrefix(imp, sdk) && rel != owner {
					t.Errorf("%s imports %s: only %s may import that SDK", rel, imp, owner)
				}
			}
			own, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			for _, rule := range rules {
				if forbidden(own, rule) && own != rel {
					t.Errorf("%s must not import %s", rel, own)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range importRules {
		if !seen[p] {
			t.Errorf("importRules names %s, which has no Go files", p)
		}
	}
}

// directImports returns the imports of the non-test Go files in dir,
// sorted, their package doc comments, and whether it has any.
func directImports(t *testing.T, dir string) ([]string, string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var doc strings.Builder
	hasGo := false
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		hasGo = true
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc.WriteString(strings.Join(strings.Fields(f.Doc.Text()), " "))
		}
		for _, imp := range f.Imports {
			out = append(out, strings.Trim(imp.Path.Value, `"`))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), doc.String(), hasGo
}

// maxFuncLines bounds every function under runner/, tests included: a
// function that does not fit on a screen does more than one thing.
const maxFuncLines = 80

func TestFunctionsAreShort(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("runner/%s:%d: %s is %d lines; split it (at most %d)", filepath.ToSlash(path), start, fn.Name.Name, n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
