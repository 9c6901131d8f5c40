package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentrunner/agentrunner/"

// The generated messages and services, named once: nearly every rule has
// the first, and only the server's rooms the second.
const (
	msgs = "gen/go/agentrunner/v1"
	svcs = "gen/go/agentrunner/service/v1"
)

// importRules is an allow-list, in the manner of Go's own
// src/go/build/deps_test.go: every package under runner/, server/ and
// store/ is listed with the packages of this module it may import
// directly, and nothing else. A new package is allowed nothing until it
// has a rule here, so a room cannot grow an arrow back up unnoticed.
// Packages outside the module are checked by the gRPC and SDK rules below;
// the transitive rule against gRPC is .ci/run's deps step.
var importRules = map[string][]string{
	// The public face takes its rooms; the rooms never reach back up.
	"runner":                               {msgs, "runner/agent", "runner/internal/budget", "runner/internal/history", "runner/internal/live", "runner/internal/replica", "runner/internal/runrec", "runner/internal/turn", "runner/memory", "runner/model", "runner/plugin", "store"},
	"runner/agent":                         {msgs, "runner/internal/seal", "runner/memory", "store"},
	"runner/agent/llmagent":                {msgs, "runner/agent", "runner/internal/seal", "runner/model", "runner/tool", "runner/tool/builtin", "store"},
	"runner/agent/workflow":                {msgs, "runner/agent"},
	"runner/agent/remotea2a":               {msgs, "runner/agent"},
	"runner/agent/remotea2a/remotea2atest": {},
	"runner/apps":                          {msgs, "runner", "runner/agent", "runner/agent/llmagent", "runner/agent/remotea2a", "runner/agent/workflow", "runner/memory", "runner/model", "runner/plugin", "runner/schedule", "runner/tool", "runner/tool/builtin", "runner/tool/mcptool", "store"},
	"runner/eval":                          {msgs, "runner/model"},
	"runner/memory":                        {msgs, "store"},
	"runner/webhook":                       {msgs, "store"},
	"runner/schedule":                      {msgs, "store"},
	"runner/plugin":                        {msgs, "runner/agent", "runner/model", "runner/tool"},
	"runner/plugin/telemetry":              {msgs, "runner/agent", "runner/model", "runner/tool"},
	"runner/runtrace":                      {msgs},
	"runner/tool":                          {msgs, "runner/agent", "runner/model"},
	"runner/tool/builtin":                  {msgs, "runner/agent", "runner/memory", "runner/model", "runner/tool"},
	"runner/tool/mcptool":                  {msgs, "runner/model", "runner/tool"},
	// A model provider knows the model interface and its own SDK; only
	// the factory knows every provider.
	"runner/model":                       {msgs},
	"runner/model/anthropic":             {msgs, "runner/model"},
	"runner/model/gemini":                {msgs, "runner/model"},
	"runner/model/offline":               {msgs, "runner/model"},
	"runner/model/openai":                {msgs, "runner/model"},
	"runner/model/retry":                 {msgs, "runner/model"},
	"runner/model/providers":             {msgs, "runner/model", "runner/model/anthropic", "runner/model/gemini", "runner/model/offline", "runner/model/openai", "runner/model/retry"},
	"runner/model/internal/providertest": {msgs, "runner/model", "runner/model/retry"},
	// The rooms of the run machinery (issue 33): the record's rules know
	// records and events; live runs know their log; the turn knows its
	// Env and Sink; the replicas know live runs and their Host.
	"runner/internal/seal":    {},
	"runner/internal/history": {msgs, "store"},
	"runner/internal/budget":  {msgs, "runner/agent", "store"},
	"runner/internal/runrec":  {msgs, "runner/agent", "runner/tool/builtin", "store"},
	"runner/internal/live":    {msgs, "runner/agent", "runner/internal/runrec", "store"},
	"runner/internal/replica": {msgs, "runner/agent", "runner/internal/live", "runner/internal/runrec", "store"},
	"runner/internal/turn":    {msgs, "runner/agent", "runner/internal/budget", "runner/internal/history", "runner/internal/runrec", "runner/memory", "runner/model", "runner/plugin", "store"},

	// Storage never depends on the runner or the server.
	"store":                {msgs},
	"store/boltstore":      {msgs, "store", "store/storecopy"},
	"store/pgstore":        {msgs, "store", "store/storecopy"},
	"store/pgstore/pgtest": {},
	"store/storetest":      {msgs, "store"},
	"store/storecopy":      {msgs, "store"},
	// The copy's conformance suite, which both stores' tests run.
	"store/storecopy/copytest": {msgs, "store", "store/storecopy", "store/storetest"},

	// The server (issue 50): server keeps gRPC (construction,
	// interceptors, codec, thin adapters) over the front desk; no child
	// of server imports server, nor its parent.
	// runner/memory: Config.Memory is the MemoryService's backend.
	"server": {msgs, svcs, "runner", "runner/apps", "runner/memory", "runner/schedule", "server/auth", "server/internal/front"},
	// The front desk: what every protocol checks before a call reaches a
	// store or a runner. It never imports server.
	"server/internal/front": {msgs, svcs, "runner", "runner/agent", "runner/eval", "runner/memory", "runner/model", "runner/runtrace", "runner/schedule", "server/auth", "store"},
	// A2A sits beside the gRPC services on the desk.
	"server/a2a": {msgs, svcs, "runner", "server/auth", "server/internal/front", "store"},
	// The operator's RPCs are given what they need as small interfaces.
	"server/admin":         {msgs, svcs},
	"server/auth":          {},
	"server/auth/devcerts": {},
	"server/console":       {},
	"server/web":           {},
}

// rulesAhead names packages whose rule is written before the package
// exists, so the rule is there the day its first file lands. Once the
// package exists, the test asks for its name to be dropped from here.
var rulesAhead = map[string]bool{}

// sdkOwners names, for each model provider's SDK, the one package that may
// import it: the provider converts to and from the SDK's types at its own
// boundary, so nothing else depends on them.
var sdkOwners = map[string]string{
	"google.golang.org/genai":                "runner/model/gemini",
	"github.com/openai/openai-go":            "runner/model/openai",
	"github.com/anthropics/anthropic-sdk-go": "runner/model/anthropic",
}

// ruledTrees are the trees importRules covers, relative to the module root.
var ruledTrees = []string{"runner", "server", "store"}

// fileImport is one import of one non-test file.
type fileImport struct {
	file string // relative to the module root, slash-separated
	path string // as written in the file
}

// pkgSource is what the test reads of a package: the imports of its
// non-test files and their package doc comments.
type pkgSource struct {
	imports []fileImport
	doc     string
}

func TestImportRules(t *testing.T) {
	pkgs := readRuledPackages(t, "..")
	for _, rel := range slices.Sorted(maps.Keys(pkgs)) {
		src := pkgs[rel]
		allowed, ok := importRules[rel]
		if !ok {
			t.Errorf("package %s has no rule: add one to importRules in runner/deps_test.go (what of this module it may import)", rel)
			continue
		}
		if inTree(rel, "runner") && !strings.Contains(src.doc, "must not import") && !strings.Contains(src.doc, "must import nothing") {
			t.Errorf("package %s: its doc comment does not say what it must not import", rel)
		}
		for _, imp := range src.imports {
			if msg := checkImport(rel, imp.path, allowed); msg != "" {
				t.Errorf("%s imports %s: %s", imp.file, imp.path, msg)
			}
		}
	}
	checkRuleTable(t, pkgs)
}

// checkImport returns why package rel may not import imp, or "".
func checkImport(rel, imp string, allowed []string) string {
	if (inTree(rel, "runner") || inTree(rel, "store")) && strings.HasPrefix(imp, "google.golang.org/grpc") {
		return "gRPC lives in server and cmd"
	}
	for sdk, owner := range sdkOwners {
		if strings.HasPrefix(imp, sdk) && rel != owner {
			return "only " + owner + " may import that SDK"
		}
	}
	own, ok := strings.CutPrefix(imp, module)
	if !ok || slices.Contains(allowed, own) {
		return ""
	}
	return "the rule for " + rel + " does not allow " + own + " (importRules in runner/deps_test.go)"
}

// checkRuleTable keeps the table itself honest: every rule names a package
// that exists (or one written ahead), and every allowed import is a
// package with a rule of its own or generated code, so a typo in a rule
// cannot allow something by accident or stay unnoticed.
func checkRuleTable(t *testing.T, pkgs map[string]pkgSource) {
	for rel, allowed := range importRules {
		_, exists := pkgs[rel]
		switch {
		case !exists && !rulesAhead[rel]:
			t.Errorf("importRules names %s, which has no Go files", rel)
		case exists && rulesAhead[rel]:
			t.Errorf("%s exists now: drop it from rulesAhead", rel)
		}
		for _, a := range allowed {
			if _, ruled := importRules[a]; !ruled && a != msgs && a != svcs {
				t.Errorf("the rule for %s allows %s, which is neither a ruled package nor generated code", rel, a)
			}
		}
	}
}

// inTree reports whether the module-relative package rel is tree or under it.
func inTree(rel, tree string) bool {
	return rel == tree || strings.HasPrefix(rel, tree+"/")
}

// readRuledPackages reads every package under ruledTrees from the module
// root: a directory with non-test Go files, testdata excluded.
func readRuledPackages(t *testing.T, root string) map[string]pkgSource {
	pkgs := map[string]pkgSource{}
	for _, tree := range ruledTrees {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if src, ok := readPackage(t, path, rel); ok {
				pkgs[rel] = src
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

// readPackage returns the imports of the non-test Go files in dir, their
// package doc comments, and whether it has any such file.
func readPackage(t *testing.T, dir, rel string) (pkgSource, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var src pkgSource
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
			src.imports = append(src.imports, fileImport{file: rel + "/" + name, path: strings.Trim(imp.Path.Value, `"`)})
		}
	}
	src.doc = doc.String()
	return src, hasGo
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
