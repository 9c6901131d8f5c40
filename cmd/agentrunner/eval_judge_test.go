package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeJudgeAPI is an OpenAI-compatible Chat Completions endpoint on
// 127.0.0.1 that grades like a judge would: every response is polite, and
// a response names the specialist when it says "billing".
func fakeJudgeAPI(t *testing.T, calls *atomic.Int32) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		prompt := string(req.Messages[len(req.Messages)-1].Content)
		_, response, _ := strings.Cut(prompt, "final response:")
		named := "no"
		if strings.Contains(strings.SplitN(response, ">>>", 2)[0], "billing") {
			named = "yes"
		}
		answer := "Property: The response is polite.\nRationale: it is.\nVerdict: yes\n" +
			"Property: The response names the billing specialist.\nRationale: looked for it.\nVerdict: " + named + "\n"
		body, _ := json.Marshal(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "judge",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestEvalRubricJudge: a rubric-based criterion is judged by a model of
// the apps file (here an OpenAI-compatible API on loopback), twice per
// turn with num_samples 2: the billing case meets both rubrics, the
// greeting one of two.
func TestEvalRubricJudge(t *testing.T) {
	offlineEnv(t)
	t.Setenv("OPENAI_API_KEY", "")
	var calls atomic.Int32
	url := fakeJudgeAPI(t, &calls)
	dir := t.TempDir()
	apps := filepath.Join(dir, "apps.yaml")
	cfg := strings.Replace(supportApps, "models:\n", fmt.Sprintf("models:\n  - { name: judge, provider: openai, model: grader, base_url: %q }\n", url+"/v1"), 1)
	if err := os.WriteFile(apps, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := inProcess{}.Serve(t, "--data", filepath.Join(dir, "db"), "--config", apps)
	set := filepath.Join(dir, "set.evalset.json")
	data, err := os.ReadFile(demoEvalSet)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(set, data, 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "test_config.json")
	if err := os.WriteFile(config, []byte(`{"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.75,
		"judge_model_options": {"judge_model": "judge", "num_samples": 2},
		"rubrics": [{"rubric_id": "polite", "rubric_content": {"text_property": "The response is polite."}},
		            {"rubric_id": "named", "rubric_content": {"text_property": "The response names the billing specialist."}}]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := inProcess{}.CLI(t, "eval", set, "--addr", srv.Addr, "--user", "ci")
	if code != 1 {
		t.Fatalf("eval exited %d, want 1 (the tech case fails the rubric; the two-turn case averages 1 and 0.5 to the threshold):\n%s%s", code, out, errOut)
	}
	for _, row := range []string{`billing_question\s+PASS\s+1\.00/0\.75`, `tech_question\s+FAIL\s+0\.50/0\.75`, `small_talk_then_billing\s+PASS\s+0\.75/0\.75`} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("no row %s in:\n%s", row, out)
		}
	}
	// 4 turns, 2 samples each.
	if n := calls.Load(); n != 8 {
		t.Errorf("the judge API was called %d times, want 8", n)
	}
}
