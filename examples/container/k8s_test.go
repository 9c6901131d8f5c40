package container_test

// The Kubernetes manifests (k8s/agentrunner.yaml) against the API's own
// schemas: the OpenAPI v3 documents that Kubernetes publishes in its
// repository (api/openapi-spec/v3), of a pinned release, taken from the Go
// module proxy as the k8s.io/kubernetes module (about 18 MB, once; only the
// proxy is needed, no cluster and no kubectl). Each document's schema is
// the one whose x-kubernetes-group-version-kind names its apiVersion and
// kind, made strict as `kubectl apply --dry-run=client` is (an unknown
// field is an error), and checked with google/jsonschema-go.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"
)

// kubernetesModule is the release whose schemas the manifests must fit.
const kubernetesModule = "k8s.io/kubernetes@v1.34.2"

// specFiles are the OpenAPI v3 documents of the groups the manifests use.
var specFiles = []string{"api__v1_openapi.json", "apis__apps__v1_openapi.json", "apis__policy__v1_openapi.json"}

func TestKubernetesManifestsFitTheSchemas(t *testing.T) {
	docs := manifests(t, "k8s/agentrunner.yaml")
	defs := kubernetesSchemas(t)
	kinds := map[string]bool{}
	for _, doc := range docs {
		kinds[doc["kind"].(string)] = true
		if err := validate(t, defs, doc); err != nil {
			t.Errorf("%s %v: %v", doc["kind"], doc["metadata"].(map[string]any)["name"], err)
		}
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("k8s/agentrunner.yaml has no %s", k)
		}
	}

	// The check bites: a misspelt field, a wrong type and a missing
	// required field are each refused.
	for name, mutate := range map[string]func(map[string]any){
		"unknown field spec.replica": func(d map[string]any) { d["spec"].(map[string]any)["replica"] = 2 },
		"replicas a string":          func(d map[string]any) { d["spec"].(map[string]any)["replicas"] = "two" },
		"misspelt readOnlyRootFileSystem deep in the pod": func(d map[string]any) {
			c := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
			c.(map[string]any)["securityContext"].(map[string]any)["readOnlyRootFileSystem"] = true
		},
		"container without a name": func(d map[string]any) {
			c := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0]
			delete(c.(map[string]any), "name")
		},
	} {
		bad := manifests(t, "k8s/agentrunner.yaml")[0]
		if bad["kind"] != "Deployment" {
			t.Fatalf("the first document is a %v, not the Deployment", bad["kind"])
		}
		mutate(bad)
		if err := validate(t, defs, bad); err == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

// The pod's termination grace covers serve's drain and shutdown grace, so
// that a drained pod (the PodDisruptionBudget lets one go at a time)
// finishes its runs before it is killed.
func TestKubernetesGraceCoversTheDrain(t *testing.T) {
	d := manifests(t, "k8s/agentrunner.yaml")[0]
	pod := d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	grace := time.Duration(pod["terminationGracePeriodSeconds"].(float64)) * time.Second
	var args []string
	for _, a := range pod["containers"].([]any)[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	flag := func(name string) time.Duration {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				v, err := time.ParseDuration(args[i+1])
				if err != nil {
					t.Fatalf("%s %s: %v", name, args[i+1], err)
				}
				return v
			}
		}
		t.Fatalf("the container's args set no %s: %q", name, args)
		return 0
	}
	if need := flag("--drain-timeout") + flag("--shutdown-grace"); grace < need {
		t.Errorf("terminationGracePeriodSeconds is %v, less than --drain-timeout + --shutdown-grace (%v)", grace, need)
	}
}

// manifests reads a multi-document YAML file as JSON values.
func manifests(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var v any
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("%s holds no documents", path)
	}
	return docs
}

var schemaCache map[string]any

// kubernetesSchemas returns the component schemas of specFiles, made into
// JSON Schema $defs: references rewritten, objects closed.
func kubernetesSchemas(t *testing.T) map[string]any {
	t.Helper()
	if schemaCache != nil {
		return schemaCache
	}
	// Outside this module, so that nothing is added to go.mod or go.sum.
	cmd := exec.Command("go", "mod", "download", "-json", kubernetesModule)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s (the module proxy is needed once): %v\n%s%s", kubernetesModule, err, out, stderr.Bytes())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s %s", kubernetesModule, err, mod.Error, out)
	}
	defs := map[string]any{}
	for _, name := range specFiles {
		b, err := os.ReadFile(filepath.Join(mod.Dir, "api", "openapi-spec", "v3", name))
		if err != nil {
			t.Fatal(err)
		}
		var spec struct {
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(b, &spec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for k, v := range spec.Components.Schemas {
			defs[k] = v
		}
	}
	for k, v := range defs {
		list, _ := v.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
		for _, x := range list {
			gvk := x.(map[string]any)
			gvks[gvk["group"].(string)+"/"+gvk["version"].(string)+"/"+gvk["kind"].(string)] = k
		}
		defs[k] = toJSONSchema(v)
	}
	schemaCache = defs
	return defs
}

var componentRef = regexp.MustCompile(`^#/components/schemas/`)

// toJSONSchema rewrites an OpenAPI v3 schema: $ref into $defs, and every
// object with properties closed to others (additionalProperties false),
// unless Kubernetes keeps unknown fields there.
func toJSONSchema(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			switch {
			case k == "$ref":
				out[k] = componentRef.ReplaceAllString(x.(string), "#/$$defs/")
			case k == "format" || k == "default" || k == "example" || strings.HasPrefix(k, "x-"):
				// Annotations; formats such as int-or-string are not JSON Schema's.
			case k == "properties":
				props := map[string]any{}
				for p, s := range x.(map[string]any) {
					props[p] = toJSONSchema(s)
				}
				out[k] = props
			default:
				out[k] = toJSONSchema(x)
			}
		}
		if _, ok := v["properties"]; ok && v["additionalProperties"] == nil && v["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toJSONSchema(x)
		}
		return out
	}
	return v
}

// validate checks doc against the schema of its apiVersion and kind.
func validate(t *testing.T, defs map[string]any, doc map[string]any) error {
	t.Helper()
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	def := ""
	for name := range defs {
		if gvkMatches(t, name, group, version, kind) {
			def = name
		}
	}
	if def == "" {
		return errors.New("no schema for apiVersion " + apiVersion + " kind " + kind + " in " + kubernetesModule)
	}
	root := map[string]any{"$defs": defs, "$ref": "#/$defs/" + def}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", def, err)
	}
	return rs.Validate(doc)
}

// gvks maps "group/version/kind" to its schema's name, from the
// documents' x-kubernetes-group-version-kind (core's group is "").
var gvks = map[string]string{}

func gvkMatches(t *testing.T, name, group, version, kind string) bool {
	t.Helper()
	return gvks[group+"/"+version+"/"+kind] == name
}
