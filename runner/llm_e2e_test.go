package runner_test

// End-to-end tests of LLM agents: the real Gemini model (the genai client)
// against a fake Gemini HTTP server on 127.0.0.1, through a real Runner over
// a real bbolt store. The fake answers each request with the next scripted
// reply and records what it was sent, so that tests assert both on what the
// Run stream carried and on what the model was asked.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/gemini"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

const modelName = "gemini-2.5-flash"

// fakeGemini is a scripted Gemini API on 127.0.0.1.
type fakeGemini struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	replies  []reply
	requests []seenRequest
}

// seenRequest is one request as the fake received it.
type seenRequest struct {
	Path   string
	Stream bool
	Body   map[string]any
}

// reply answers one request.
type reply func(w http.ResponseWriter, r *http.Request)

func newFakeGemini(t *testing.T, replies ...reply) *fakeGemini {
	t.Helper()
	// Nothing from the environment may point the client elsewhere or
	// supply real credentials.
	for _, k := range []string{
		"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE",
		"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_APPLICATION_CREDENTIALS",
	} {
		t.Setenv(k, "")
	}
	f := &fakeGemini{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake gemini: read body: %v", err)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake gemini: body is not JSON: %v: %s", err, raw)
	}
	if got := r.Header.Get("x-goog-api-key"); got != "fake-key" {
		f.t.Errorf("fake gemini: api key %q", got)
	}
	f.mu.Lock()
	f.requests = append(f.requests, seenRequest{Path: r.URL.Path, Stream: isStream(r), Body: body})
	var next reply
	if len(f.replies) > 0 {
		next, f.replies = f.replies[0], f.replies[1:]
	}
	f.mu.Unlock()
	if next == nil {
		f.t.Errorf("fake gemini: unexpected request %d to %s", len(f.requests), r.URL.Path)
		httpError(http.StatusInternalServerError, "INTERNAL", "fake: no reply scripted")(w, r)
		return
	}
	next(w, r)
}

// model returns the real Gemini model pointed at the fake.
func (f *fakeGemini) model(t *testing.T) model.Model {
	t.Helper()
	m, err := gemini.New(t.Context(), modelName, gemini.WithClientConfig(genai.ClientConfig{
		APIKey:      "fake-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: f.srv.URL},
	}))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fakeGemini) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *fakeGemini) unused() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.replies)
}

func isStream(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse"
}

// response is a GenerateContentResponse with the given parts.
func response(parts []any, finishReason string) string {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finishReason != "" {
		cand["finishReason"] = finishReason
	}
	m := map[string]any{"candidates": []any{cand}, "modelVersion": "fake-model-001", "responseId": "fake-response"}
	if finishReason != "" {
		m["usageMetadata"] = map[string]any{"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// answer replies with parts, as JSON to a unary call and as one event to a
// streaming one.
func answer(parts ...any) reply {
	return answerWith("STOP", parts...)
}

func answerWith(finishReason string, parts ...any) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		body := response(parts, finishReason)
		if isStream(r) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\r\n\r\n", body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// chunks streams one text chunk per event; a unary call is refused so that
// a test that expected streaming fails loudly.
func chunks(texts ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			httpError(http.StatusBadRequest, "INVALID_ARGUMENT", "fake: this reply is for streaming calls")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, s := range texts {
			finish := ""
			if i == len(texts)-1 {
				finish = "STOP"
			}
			fmt.Fprintf(w, "data: %s\r\n\r\n", response([]any{say(s)}, finish))
			w.(http.Flusher).Flush()
		}
	}
}

func httpError(code int, status, message string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, code, message, status)
	}
}

func say(s string) any { return map[string]any{"text": s} }

func call(name string, args map[string]any) any {
	return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
}

// harness is one app over a fresh store with one session.
type harness struct {
	r  *runner.Runner
	db *boltstore.Store
	k  store.SessionKey
}

func newHarness(t *testing.T, root agent.Agent) *harness {
	t.Helper()
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "agentrunner.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	r, err := runner.New(runner.Config{AppName: "app", Root: root, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u1", Session: "s1"}
	if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	return &harness{r: r, db: db, k: k}
}

// runResult is what one Run produced: events and in-band errors in stream
// order, and the terminal error.
type runResult struct {
	events []*agentrunnerv1.Event
	lines  []string
	errs   []error
	err    error
}

func (h *harness) run(t *testing.T, ctx context.Context, msg *agentrunnerv1.Content, cfg *agentrunnerv1.RunConfig) runResult {
	t.Helper()
	var res runResult
	for ev, err := range h.r.Run(ctx, runner.Request{UserID: h.k.User, SessionID: h.k.Session, NewMessage: msg, Config: cfg}) {
		if res.err != nil {
			t.Fatalf("element after the terminal error %v", res.err)
		}
		var ae *agent.AgentError
		switch {
		case errors.As(err, &ae):
			res.errs = append(res.errs, err)
			res.lines = append(res.lines, "error: "+err.Error())
		case err != nil:
			res.err = err
		default:
			res.events = append(res.events, ev)
			res.lines = append(res.lines, line(ev))
		}
	}
	return res
}

// line renders an event as "author: text", with its function calls and
// responses, "(partial)" and its error code.
func line(ev *agentrunnerv1.Event) string {
	var parts []string
	for _, p := range ev.GetContent().GetParts() {
		switch {
		case p.GetFunctionCall() != nil:
			parts = append(parts, fmt.Sprintf("call %s%s", p.GetFunctionCall().GetName(), jsonString(p.GetFunctionCall().GetArgs())))
		case p.GetFunctionResponse() != nil:
			parts = append(parts, fmt.Sprintf("response %s%s", p.GetFunctionResponse().GetName(), jsonString(p.GetFunctionResponse().GetResponse())))
		default:
			parts = append(parts, p.GetText())
		}
	}
	s := ev.GetAuthor() + ": " + strings.Join(parts, " | ")
	if ev.GetPartial() {
		s += " (partial)"
	}
	if ev.GetErrorCode() != "" {
		s += " [" + ev.GetErrorCode() + "]"
	}
	return s
}

// jsonString renders a struct with sorted keys.
func jsonString(s *structpb.Struct) string {
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return "?"
	}
	return string(b)
}

// matchLines compares rendered lines; a wanted "error: x" matches any
// in-band error whose message contains x.
func matchLines(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if rest, ok := strings.CutPrefix(want[i], "error: "); ok {
			if !strings.HasPrefix(got[i], "error: ") || !strings.Contains(got[i], rest) {
				return false
			}
			continue
		}
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func userMsg(s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// functionResponseTo answers the long-running call in events.
func functionResponseTo(t *testing.T, events []*agentrunnerv1.Event, response map[string]any) *agentrunnerv1.Content {
	t.Helper()
	for _, ev := range events {
		for _, id := range ev.GetLongRunningToolIds() {
			for _, p := range ev.GetContent().GetParts() {
				if fc := p.GetFunctionCall(); fc.GetId() == id {
					s, err := structpb.NewStruct(response)
					if err != nil {
						t.Fatal(err)
					}
					return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
						FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: fc.GetName(), Response: s},
					}}}}
				}
			}
		}
	}
	t.Fatalf("no long-running call among the events")
	return nil
}

// Helpers that read a request body as the genai client wrote it.

func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func systemInstruction(body map[string]any) string {
	s, _ := get(body, "systemInstruction", "parts", 0, "text").(string)
	return s
}

// contentLines renders the request's contents as "role: part | part".
func contentLines(body map[string]any) []string {
	var out []string
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		var parts []string
		ps, _ := get(c, "parts").([]any)
		for _, p := range ps {
			switch {
			case get(p, "functionCall") != nil:
				parts = append(parts, fmt.Sprintf("call %v%s", get(p, "functionCall", "name"), mustJSON(get(p, "functionCall", "args"))))
			case get(p, "functionResponse") != nil:
				parts = append(parts, fmt.Sprintf("response %v%s", get(p, "functionResponse", "name"), mustJSON(get(p, "functionResponse", "response"))))
			case get(p, "inlineData") != nil:
				parts = append(parts, fmt.Sprintf("blob %v", get(p, "inlineData", "mimeType")))
			default:
				parts = append(parts, fmt.Sprint(get(p, "text")))
			}
		}
		out = append(out, fmt.Sprintf("%v: %s", get(c, "role"), strings.Join(parts, " | ")))
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// declarations returns the declared functions by name.
func declarations(body map[string]any) map[string]any {
	out := map[string]any{}
	decls, _ := get(body, "tools", 0, "functionDeclarations").([]any)
	for _, d := range decls {
		out[fmt.Sprint(get(d, "name"))] = d
	}
	return out
}

func toolNames(body map[string]any) []string {
	var names []string
	for n := range declarations(body) {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func transferEnum(t *testing.T, body map[string]any) []string {
	t.Helper()
	enum, _ := get(declarations(body)["transfer_to_agent"], "parametersJsonSchema", "properties", "agent_name", "enum").([]any)
	var out []string
	for _, e := range enum {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// functionIDs returns the ids of the function calls and responses in the
// request's contents, in order.
func functionIDs(body map[string]any) (calls, responses []string) {
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		ps, _ := get(c, "parts").([]any)
		for _, p := range ps {
			if id, ok := get(p, "functionCall", "id").(string); ok {
				calls = append(calls, id)
			}
			if id, ok := get(p, "functionResponse", "id").(string); ok {
				responses = append(responses, id)
			}
		}
	}
	return calls, responses
}

func llmAgent(t *testing.T, cfg llmagent.Config) agent.Agent {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// supportTree is the example: triage routes to billing and to tech;
// tech keeps the conversation (no transfer to its parent or peers).
func supportTree(t *testing.T, m model.Model) agent.Agent {
	billing := llmAgent(t, llmagent.Config{Name: "billing", Description: "Answers billing questions.", Model: m, Instruction: "You answer billing questions."})
	tech := llmAgent(t, llmagent.Config{Name: "tech", Description: "Answers technical questions.", Model: m, Instruction: "You answer technical questions.",
		DisallowTransferToParent: true, DisallowTransferToPeers: true})
	return llmAgent(t, llmagent.Config{Name: "triage", Description: "Routes the user to the right specialist.", Model: m,
		Instruction: "Route billing questions to billing and technical ones to tech.", SubAgents: []agent.Agent{billing, tech}})
}

type weatherArgs struct {
	City string `json:"city" description:"The city to report on."`
	Unit string `json:"unit,omitempty" jsonschema:"celsius or fahrenheit"`
}

type weather struct {
	Sky   string `json:"sky"`
	TempC int    `json:"temp_c"`
}

// weatherTool reports clear skies, except in Atlantis, which it cannot
// find; it records the city it was asked about in state.
func weatherTool(t *testing.T) tool.Tool {
	wt, err := tool.NewFunction("get_weather", "Reports the weather in a city.", func(ctx tool.Context, args weatherArgs) (weather, error) {
		if args.City == "Atlantis" {
			return weather{}, errors.New("city not found")
		}
		if err := ctx.State().Set("last_city", args.City); err != nil {
			return weather{}, err
		}
		return weather{Sky: "clear", TempC: 21}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return wt
}

// e2eRun is one Run of a scenario.
type e2eRun struct {
	// msg returns the new message; prev holds the events of the previous
	// runs.
	msg    func(t *testing.T, prev []*agentrunnerv1.Event) *agentrunnerv1.Content
	config *agentrunnerv1.RunConfig
	want   []string
}

func says(s string) func(*testing.T, []*agentrunnerv1.Event) *agentrunnerv1.Content {
	return func(*testing.T, []*agentrunnerv1.Event) *agentrunnerv1.Content { return userMsg(s) }
}

// sseRun asks for streamed partial events.
var sseRun = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}

// geminiScenarios are LLM agent trees on the real genai client against a fake Gemini: the replies it scripts, the runs, and what the requests and the session must show.
var geminiScenarios = []struct {
	name    string
	root    func(t *testing.T, m model.Model) agent.Agent
	replies []reply
	runs    []e2eRun
	// check looks at the requests the model got and at the session.
	check func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult)
}{
	{
		name: "plain answer",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m, Instruction: "Be brief, {user:name?}."})
		},
		replies: []reply{answer(say("Hello there"))},
		runs:    []e2eRun{{msg: says("hi"), want: []string{"root: Hello there"}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			if reqs[0].Stream || !strings.HasSuffix(reqs[0].Path, "/models/"+modelName+":generateContent") {
				t.Errorf("request to %s, stream %v", reqs[0].Path, reqs[0].Stream)
			}
			if got := systemInstruction(reqs[0].Body); got != "Be brief, ." {
				t.Errorf("system instruction %q", got)
			}
			if got := contentLines(reqs[0].Body); !slices.Equal(got, []string{"user: hi"}) {
				t.Errorf("contents %q", got)
			}
			if _, ok := reqs[0].Body["tools"]; ok {
				t.Errorf("tools declared for an agent without tools or transfer targets: %v", reqs[0].Body["tools"])
			}
			ev := runs[0].events[0]
			if u := ev.GetUsageMetadata(); u.GetTotalTokenCount() != 10 || u.GetPromptTokenCount() != 7 {
				t.Errorf("usage %v", u)
			}
			if ev.GetSequence() != 2 || ev.GetContent().GetRole() != "model" || !ev.GetTurnComplete() {
				t.Errorf("event %v", ev)
			}
		},
	},
	{
		name: "transfer to a sub-agent, which answers the next run",
		root: supportTree,
		replies: []reply{
			answer(call("transfer_to_agent", map[string]any{"agent_name": "billing"})),
			answer(say("Billing here: let me look at your invoice.")),
			answer(say("Billing again: refunded.")),
		},
		runs: []e2eRun{
			{msg: says("My invoice is wrong"), want: []string{
				`triage: call transfer_to_agent{"agent_name":"billing"}`,
				`triage: response transfer_to_agent{}`,
				"billing: Billing here: let me look at your invoice.",
			}},
			{msg: says("Can I get a refund?"), want: []string{"billing: Billing again: refunded."}},
		},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			if got := transferEnum(t, reqs[0].Body); !slices.Equal(got, []string{"billing", "tech"}) {
				t.Errorf("triage's transfer targets %q", got)
			}
			instr := systemInstruction(reqs[0].Body)
			for _, want := range []string{"Route billing questions", "- billing: Answers billing questions.", "- tech: Answers technical questions."} {
				if !strings.Contains(instr, want) {
					t.Errorf("triage's instruction lacks %q:\n%s", want, instr)
				}
			}
			if got := runs[0].events[1].GetActions().GetTransferToAgent(); got != "billing" {
				t.Errorf("function response event transfers to %q", got)
			}
			// billing may go back to triage or over to tech.
			if got := transferEnum(t, reqs[1].Body); !slices.Equal(got, []string{"triage", "tech"}) {
				t.Errorf("billing's transfer targets %q", got)
			}
			if instr := systemInstruction(reqs[1].Body); !strings.HasPrefix(instr, "You answer billing questions.") || !strings.Contains(instr, "triage (your parent agent)") {
				t.Errorf("billing's instruction:\n%s", instr)
			}
			want := []string{
				"user: My invoice is wrong",
				`user: For context: | [triage] called tool ` + "`transfer_to_agent`" + ` with parameters: {"agent_name":"billing"}`,
				"user: For context: | [triage] `transfer_to_agent` tool returned result: {}",
			}
			if got := contentLines(reqs[1].Body); !slices.Equal(got, want) {
				t.Errorf("billing's contents\n%q\nwant\n%q", got, want)
			}
			want = append(want, "model: Billing here: let me look at your invoice.", "user: Can I get a refund?")
			if got := contentLines(reqs[2].Body); !slices.Equal(got, want) {
				t.Errorf("billing's second contents\n%q\nwant\n%q", got, want)
			}
		},
	},
	{
		name: "a sub-agent that disallows transfer to its parent, then the root answers",
		root: supportTree,
		replies: []reply{
			answer(call("transfer_to_agent", map[string]any{"agent_name": "tech"})),
			answer(say("Tech here: try turning it off and on.")),
			answer(say("Triage again.")),
		},
		runs: []e2eRun{
			{msg: says("My router is broken"), want: []string{
				`triage: call transfer_to_agent{"agent_name":"tech"}`,
				`triage: response transfer_to_agent{}`,
				"tech: Tech here: try turning it off and on.",
			}},
			{msg: says("Thanks"), want: []string{"triage: Triage again."}},
		},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			if _, ok := reqs[1].Body["tools"]; ok {
				t.Errorf("tech has no transfer targets but declares %v", reqs[1].Body["tools"])
			}
			if strings.Contains(systemInstruction(reqs[1].Body), "transfer_to_agent") {
				t.Errorf("tech's instruction mentions transfers: %s", systemInstruction(reqs[1].Body))
			}
			// The root sees tech's answer as context, and the new message.
			lines := contentLines(reqs[2].Body)
			if got := lines[len(lines)-2:]; !slices.Equal(got, []string{"user: For context: | [tech] said: Tech here: try turning it off and on.", "user: Thanks"}) {
				t.Errorf("triage's contents end with %q", got)
			}
		},
	},
	{
		name: "tool round trip",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{weatherTool(t)}, OutputKey: "answer"})
		},
		replies: []reply{
			answer(call("get_weather", map[string]any{"city": "Paris"})),
			answer(say("It is clear and 21°C in Paris.")),
		},
		runs: []e2eRun{{msg: says("Weather in Paris?"), want: []string{
			`root: call get_weather{"city":"Paris"}`,
			`root: response get_weather{"sky":"clear","temp_c":21}`,
			"root: It is clear and 21°C in Paris.",
		}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			decl := declarations(reqs[0].Body)["get_weather"]
			schema := get(decl, "parametersJsonSchema")
			if get(schema, "properties", "city", "type") != "string" || get(schema, "properties", "city", "description") != "The city to report on." ||
				get(schema, "properties", "unit", "description") != "celsius or fahrenheit" || mustJSON(get(schema, "required")) != `["city"]` {
				t.Errorf("get_weather declared as %s", mustJSON(decl))
			}
			want := []string{"user: Weather in Paris?", `model: call get_weather{"city":"Paris"}`, `user: response get_weather{"sky":"clear","temp_c":21}`}
			if got := contentLines(reqs[1].Body); !slices.Equal(got, want) {
				t.Errorf("second request\n%q\nwant\n%q", got, want)
			}
			calls, responses := functionIDs(reqs[1].Body)
			if len(calls) != 1 || !strings.HasPrefix(calls[0], "call-") || !slices.Equal(calls, responses) {
				t.Errorf("call ids %q, response ids %q", calls, responses)
			}
			resp := runs[0].events[1]
			if resp.GetContent().GetRole() != "user" || resp.GetActions().GetStateDelta().GetFields()["last_city"].GetStringValue() != "Paris" {
				t.Errorf("function response event %v", resp)
			}
			sess, _, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			state := sess.GetState().GetFields()
			if state["last_city"].GetStringValue() != "Paris" || state["answer"].GetStringValue() != "It is clear and 21°C in Paris." {
				t.Errorf("state %v", state)
			}
		},
	},
	{
		name: "tool error goes back to the model",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{weatherTool(t)}})
		},
		replies: []reply{
			answer(call("get_weather", map[string]any{"city": "Atlantis"})),
			answer(say("I could not find Atlantis.")),
		},
		runs: []e2eRun{{msg: says("Weather in Atlantis?"), want: []string{
			`root: call get_weather{"city":"Atlantis"}`,
			`root: response get_weather{"error":"city not found"}`,
			"root: I could not find Atlantis.",
		}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			if got := contentLines(reqs[1].Body); got[len(got)-1] != `user: response get_weather{"error":"city not found"}` {
				t.Errorf("second request ends with %q", got[len(got)-1])
			}
		},
	},
	{
		name: "long-running tool resumed by a later run with its response",
		root: func(t *testing.T, m model.Model) agent.Agent {
			approve, err := tool.NewLongRunningFunction("ask_approval", "Asks a manager to approve a refund.",
				func(ctx tool.Context, args struct {
					Amount int `json:"amount"`
				}) (map[string]any, error) {
					return map[string]any{"status": "pending", "ticket": "T-1"}, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			// refunds keeps the conversation, so only the routing of
			// function responses can bring the next run back to it.
			refunds := llmAgent(t, llmagent.Config{Name: "refunds", Description: "Handles refunds.", Model: m,
				Tools: []tool.Tool{approve}, DisallowTransferToParent: true, DisallowTransferToPeers: true})
			return llmAgent(t, llmagent.Config{Name: "root", Model: m, SubAgents: []agent.Agent{refunds}})
		},
		replies: []reply{
			answer(call("transfer_to_agent", map[string]any{"agent_name": "refunds"})),
			answer(call("ask_approval", map[string]any{"amount": 100})),
			answer(say("Your refund of 100 is approved.")),
		},
		runs: []e2eRun{
			{msg: says("Refund 100 please"), want: []string{
				`root: call transfer_to_agent{"agent_name":"refunds"}`,
				`root: response transfer_to_agent{}`,
				`refunds: call ask_approval{"amount":100}`,
				`refunds: response ask_approval{"status":"pending","ticket":"T-1"}`,
			}},
			{
				msg: func(t *testing.T, prev []*agentrunnerv1.Event) *agentrunnerv1.Content {
					return functionResponseTo(t, prev, map[string]any{"approved": true})
				},
				want: []string{"refunds: Your refund of 100 is approved."},
			},
		},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			callEv := runs[0].events[2]
			ids := callEv.GetLongRunningToolIds()
			if len(ids) != 1 || ids[0] != callEv.GetContent().GetParts()[0].GetFunctionCall().GetId() {
				t.Errorf("long-running ids %q on %v", ids, callEv)
			}
			// The call and the client's response are together; the
			// interim response gave way to the final one.
			lines := contentLines(reqs[2].Body)
			want := []string{`model: call ask_approval{"amount":100}`, `user: response ask_approval{"approved":true}`}
			if len(lines) < 2 || !slices.Equal(lines[len(lines)-2:], want) {
				t.Errorf("resumed request\n%q\nends without\n%q", lines, want)
			}
			calls, responses := functionIDs(reqs[2].Body)
			if !slices.Equal(calls, responses) || !slices.Equal(calls, ids) {
				t.Errorf("call ids %q, response ids %q, want %q", calls, responses, ids)
			}
		},
	},
	{
		name: "streaming partials then one persisted complete event",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m})
		},
		replies: []reply{chunks("Hello", ", stream", "ing world")},
		runs: []e2eRun{{msg: says("stream please"), config: sseRun, want: []string{
			"root: Hello (partial)",
			"root: , stream (partial)",
			"root: ing world (partial)",
			"root: Hello, streaming world",
		}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			if !reqs[0].Stream {
				t.Errorf("request to %s was not streamed", reqs[0].Path)
			}
			for _, ev := range runs[0].events[:3] {
				if ev.GetSequence() != 0 {
					t.Errorf("partial event has sequence %d", ev.GetSequence())
				}
			}
			final := runs[0].events[3]
			if final.GetSequence() == 0 || final.GetUsageMetadata().GetTotalTokenCount() != 10 {
				t.Errorf("complete event %v", final)
			}
			_, events, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var stored []string
			for _, ev := range events {
				stored = append(stored, line(ev))
			}
			if want := []string{"user: stream please", "root: Hello, streaming world"}; !slices.Equal(stored, want) {
				t.Errorf("stored %q, want %q", stored, want)
			}
		},
	},
	{
		name: "output_key saves the final answer",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m, OutputKey: "summary"})
		},
		replies: []reply{answer(say("All good."))},
		runs:    []e2eRun{{msg: says("summarise"), want: []string{"root: All good."}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			sess, _, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sess.GetState().GetFields()["summary"].GetStringValue(); got != "All good." {
				t.Errorf("state summary = %q", got)
			}
		},
	},
	{
		name: "model HTTP 500",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m})
		},
		replies: []reply{httpError(http.StatusInternalServerError, "INTERNAL", "backend exploded")},
		runs: []e2eRun{{msg: says("hi"), want: []string{
			"root:  [UNKNOWN]", // the in-band failure, stored (without content) before it is delivered
			`error: agent root: gemini model "gemini-2.5-flash": HTTP 500 INTERNAL: backend exploded`,
		}}},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			var apiErr *gemini.APIError
			if !errors.As(runs[0].errs[0], &apiErr) || apiErr.Code != 500 || !apiErr.Retryable() {
				t.Errorf("error %v does not carry the API error", runs[0].errs[0])
			}
		},
	},
	{
		name: "model HTTP 429",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m})
		},
		replies: []reply{httpError(http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "quota exceeded")},
		runs: []e2eRun{
			{msg: says("hi"), want: []string{"root:  [UNKNOWN]", `error: agent root: gemini model "gemini-2.5-flash": HTTP 429 RESOURCE_EXHAUSTED: quota exceeded`}},
		},
		check: func(t *testing.T, h *harness, reqs []seenRequest, runs []runResult) {
			var apiErr *gemini.APIError
			if !errors.As(runs[0].errs[0], &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" {
				t.Errorf("error %v does not carry the API error", runs[0].errs[0])
			}
		},
	},
	{
		name: "an answer cut short is an event with its error code",
		root: func(t *testing.T, m model.Model) agent.Agent {
			return llmAgent(t, llmagent.Config{Name: "root", Model: m})
		},
		replies: []reply{answerWith("MAX_TOKENS", say("The answer is"))},
		runs:    []e2eRun{{msg: says("hi"), want: []string{"root: The answer is [MAX_TOKENS]"}}},
	},
}

func TestLLMAgentsOnGemini(t *testing.T) {
	for _, tc := range geminiScenarios {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeGemini(t, tc.replies...)
			h := newHarness(t, tc.root(t, fake.model(t)))
			var prev []*agentrunnerv1.Event
			var results []runResult
			for i, run := range tc.runs {
				res := h.run(t, t.Context(), run.msg(t, prev), run.config)
				if res.err != nil {
					t.Fatalf("run %d: terminal error %v", i, res.err)
				}
				if !matchLines(res.lines, run.want) {
					t.Fatalf("run %d streamed\n%s\nwant\n%s", i, strings.Join(res.lines, "\n"), strings.Join(run.want, "\n"))
				}
				prev = append(prev, res.events...)
				results = append(results, res)
			}
			if n := fake.unused(); n > 0 {
				t.Errorf("%d scripted replies were not requested", n)
			}
			if tc.check != nil {
				tc.check(t, h, fake.seen(), results)
			}
		})
	}
}

// TestGeminiCancelMidStream cancels a run while the model is streaming: the
// run ends with the context's error, the HTTP call is aborted, nothing of
// the cut answer is stored, and no goroutine of the runner, the model or
// the genai client is left behind.
func TestGeminiCancelMidStream(t *testing.T) {
	started := make(chan struct{})
	aborted := make(chan struct{})
	fake := newFakeGemini(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\r\n\r\n", response([]any{say("Once upon")}, ""))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // hold the stream open until the client goes away
		close(aborted)
	})
	h := newHarness(t, llmAgent(t, llmagent.Config{Name: "root", Model: fake.model(t)}))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan runResult, 1)
	go func() {
		var res runResult
		cfg := &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
		for ev, err := range h.r.Run(ctx, runner.Request{UserID: h.k.User, SessionID: h.k.Session, NewMessage: userMsg("tell me a story"), Config: cfg}) {
			if err != nil {
				res.err = err
				continue
			}
			res.lines = append(res.lines, line(ev))
			if ev.GetPartial() {
				cancel() // the model is mid-answer: the client goes away
			}
		}
		done <- res
	}()

	var res runResult
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end after its context was cancelled")
	}
	waitClosed(t, started, "the model call")
	waitClosed(t, aborted, "the server to see the call aborted")
	if want := []string{"root: Once upon (partial)"}; !slices.Equal(res.lines, want) {
		t.Errorf("streamed %q, want %q", res.lines, want)
	}
	if !errors.Is(res.err, context.Canceled) {
		t.Errorf("terminal error %v, want context.Canceled", res.err)
	}
	_, events, err := h.db.GetSession(t.Context(), h.k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The event that says the run was cancelled keeps what the caller saw
	// stream, marked interrupted.
	if len(events) != 2 || events[0].GetAuthor() != "user" || events[1].GetErrorCode() != "CANCELLED" ||
		!events[1].GetInterrupted() || len(events[1].GetContent().GetParts()) != 1 || events[1].GetContent().GetParts()[0].GetText() != "Once upon" {
		t.Errorf("stored %v, want only the user's message and the event that says the run was cancelled, with the streamed text", events)
	}
	waitNoGoroutines(t, "agentrunner/agentrunner/runner.", "agentrunner/runner/model/gemini.", "google.golang.org/genai.")
}

// waitNoGoroutines waits, for a bounded time, until no goroutine other
// than the caller's has a frame in a function whose name contains one of
// the patterns. Goroutines that are ending may need a moment to go; one
// that stays is a leak.
func waitNoGoroutines(t *testing.T, patterns ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked := leakedGoroutines(patterns)
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left behind:\n\n%s", strings.Join(leaked, "\n\n"))
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond) // polling, bounded by the deadline
	}
}

func leakedGoroutines(patterns []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	stacks := strings.Split(string(buf), "\n\n")
	var out []string
	for _, s := range stacks[1:] { // the first is the caller's own
		if strings.Contains(s, "testing.(*T).Parallel") {
			continue // a test waiting for its turn, not a leak
		}
		if strings.Contains(s, "testing.(*M).Run(") {
			continue // the binary's main goroutine, in this package's TestMain
		}
		for _, p := range patterns {
			if strings.Contains(s, p) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
