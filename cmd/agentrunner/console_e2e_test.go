package main

// Browser tests of the web console: the real server (serve, in-process,
// with its HTTP listener on a free port) and Debian's Chromium, driven by
// chromedp. One browser serves every test of the binary; each test gets a
// tab with a deadline. Without chromium the tests skip, except under CI
// (the CI variable set), where a missing browser must not turn into green
// skips.

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/chromedp/chromedp"
)

var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
)

// chromium finds the browser, or skips (fails under CI).
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH, and CI is set: the console's browser tests must run (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install --no-install-recommends chromium)")
	return ""
}

// browser starts the one browser of this test binary. Its context has no
// deadline: that context owns the browser, and a deadline would end it for
// every later test. The browser dies with the test binary (chromedp sets
// Pdeathsig on Linux).
func browser(t testing.TB) context.Context {
	t.Helper()
	path := chromium(t)
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("headless", "new"), chromedp.Flag("disable-component-update", true),
			chromedp.WindowSize(1280, 900))
		alloc, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		browserCtx, _ = chromedp.NewContext(alloc)
		browserErr = chromedp.Do(browserCtx)
	})
	if browserErr != nil {
		t.Fatalf("starting chromium: %v", browserErr)
	}
	return browserCtx
}

// tab is one browser tab on the console, for one test.
type tab struct {
	t       *testing.T
	ctx     context.Context
	console string
}

// openTab opens a tab on console+path, with the page's console messages
// in the test log, and closes it when the test ends.
func openTab(t *testing.T, console, path string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser(t))
	ctx, cancelD := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelD(); cancel() })
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.Logf("page: %v", m)
		}
	}()
	p := &tab{t: t, ctx: ctx, console: console}
	p.do(chromedp.Navigate(console + path))
	return p
}

func (p *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v\npage text:\n%s", err, p.bodyText())
	}
}

func (p *tab) bodyText() string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 2*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// wait polls a JavaScript expression until it is truthy and returns its
// value as a string; what is waited for is named in the failure.
func (p *tab) wait(what, expr string, timeout time.Duration) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Poll[any](expr, chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		p.t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, expr, err, p.bodyText())
	}
	return fmt.Sprint(v)
}

// click waits for the element of a CSS selector and clicks it.
func (p *tab) click(sel string) {
	p.t.Helper()
	q, _ := json.Marshal(sel)
	p.wait("clickable "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e || e.disabled) return false; e.click(); return true })()`, q), 20*time.Second)
}

// fill sets an input's value as typing would (an input event follows).
func (p *tab) fill(sel, value string) {
	p.t.Helper()
	q, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	p.wait("input "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.value = %s; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`, q, v), 20*time.Second)
}

// has evaluates a JavaScript condition once.
func (p *tab) has(expr string) bool {
	p.t.Helper()
	ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`Boolean(`+expr+`)`))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return ok
}

// chatReady waits until a session's chat has loaded its events and runs.
func (p *tab) chatReady() {
	p.t.Helper()
	p.wait("the loaded chat", `document.querySelector("#timeline")?.dataset.loaded`, 20*time.Second)
}

func (p *tab) text(sel string) string {
	q, _ := json.Marshal(sel)
	return p.wait("text of "+sel, fmt.Sprintf(`(() => { const e = document.querySelector(%s); return e ? e.textContent || " " : false })()`, q), 20*time.Second)
}

// shot writes a screenshot of the page into docs/console when
// CONSOLE_SCREENSHOTS=1 (how the README's pictures are made).
func (p *tab) shot(name string) {
	p.t.Helper()
	if os.Getenv("CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// consoleServer serves the default apps with the HTTP listener and
// returns the console's URL and gRPC clients of the same server.
func consoleServer(t *testing.T, args ...string) (string, servicev1.RunnerServiceClient, servicev1.SessionServiceClient, servicev1.ArtifactServiceClient) {
	t.Helper()
	browser(t) // skip before starting a server when there is no browser
	addr, console, _, _ := startConsole(t, args...)
	conn := dial(t, addr)
	return console, servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn), servicev1.NewArtifactServiceClient(conn)
}

func sessionPath(app, user, id string) string {
	return "apps/" + app + "/users/" + user + "/sessions/" + id
}

// activeRun returns the run in progress on a session, failing without one.
func activeRun(t *testing.T, rc servicev1.RunnerServiceClient, app, user, session string) *agentrunnerv1.Run {
	t.Helper()
	resp, err := rc.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: app, UserId: user, SessionId: session, PageSize: 5})
	if err != nil || len(resp.GetRuns()) == 0 {
		t.Fatalf("ListRuns of %s: %v, %v; want a run", session, resp, err)
	}
	return resp.GetRuns()[0]
}

// TestConsoleSignIn: against a server with --auth-file, the page asks for
// a token, keeps it for the tab, and then shows what the principal may see.
func TestConsoleSignIn(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: [demo, slow], users: [self]}
`)
	console, _, _, _ := consoleServer(t, "--auth-file", authFile)
	p := openTab(t, console, "apps")
	p.wait("the sign-in form", `document.querySelector("#signin.open #token")`, 20*time.Second)
	p.shot("signin")
	p.fill("#token", "alice-secret")
	p.click("#signin-submit")
	p.wait("alice's apps", `document.querySelector("#app-slow") && document.querySelector("#app-demo") && !document.querySelector("#app-support")`, 20*time.Second)
	p.shot("apps")
	if got := p.wait("the token in sessionStorage", `sessionStorage.getItem("agentrunner.token")`, 5*time.Second); got != "alice-secret" {
		t.Errorf("sessionStorage token = %q", got)
	}
	if p.wait("banner state", `document.querySelector("#noauth") ? "banner" : "none"`, 5*time.Second) != "none" {
		t.Error(`"no authentication" banner on a server with --auth-file`)
	}
}

// TestConsoleSessions: without auth the page says so; a session created
// in the page exists on the server with its initial state, and the list
// shows it.
func TestConsoleSessions(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	p := openTab(t, console, "apps/slow/users/ann/sessions")
	p.wait("the no-auth banner", `document.querySelector("#noauth")`, 20*time.Second)
	p.fill("#new-session-id", "first")
	p.fill("#new-session-state", `{"topic": "tea"}`)
	p.click("#create-session")
	p.wait("the new session's page", `location.pathname.endsWith("/apps/slow/users/ann/sessions/first") && document.querySelector("#session-id")?.textContent === "first"`, 20*time.Second)
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "slow", UserId: "ann", SessionId: "first"})
	if err != nil || got.GetSession().GetState().GetFields()["topic"].GetStringValue() != "tea" {
		t.Fatalf("GetSession after the page created it: %v, %v", got, err)
	}
	p.click("#nav-sessions")
	p.wait("the session in the list", `document.querySelector('#session-rows tr[data-session="first"]')`, 20*time.Second)
	p.shot("sessions")
}

// TestConsoleChatStreams: a message sent in the page streams its answer:
// text is on the page while the run is still RUNNING, then the stored
// event replaces it in the timeline.
func TestConsoleChatStreams(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "chat")
	p := openTab(t, console, sessionPath("slow", "u", "chat"))
	p.chatReady()
	p.fill("#chat-input", "hello there")
	p.click("#send")
	partial := p.wait("streamed text while the run runs",
		`(() => { const l = document.querySelector("#live-text"); return l && l.textContent.length > 0 && document.querySelector("#run-state").dataset.status === "RUNNING" ? l.textContent : false })()`, 20*time.Second)
	if !p.has(`[...document.querySelectorAll("#timeline article.from-user .text")].some(e => e.textContent === "hello there")`) {
		t.Error("the user's message is not in the timeline while its run streams")
	}
	p.shot("chat-streaming")
	final := p.wait("the answer in the timeline",
		`(() => { const a = [...document.querySelectorAll("#timeline article.event")].find(e => e.querySelector(".author")?.textContent === "slowpoke"); return a && document.querySelector("#run-state").dataset.status === "" ? a.querySelector(".text").textContent : false })()`, 30*time.Second)
	if !strings.HasPrefix(final, partial) || len(final) <= len(partial) {
		t.Errorf("streamed %q, then stored %q: want a strict prefix", partial, final)
	}
	if r := activeRun(t, rc, "slow", "u", "chat"); r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("run after the chat: %v", r.GetStatus())
	}
	p.shot("chat")
}

// TestConsoleStop: Stop cancels the run on the server, not just the
// page's stream.
func TestConsoleStop(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "stop")
	p := openTab(t, console, sessionPath("slow", "u", "stop"))
	p.chatReady()
	p.fill("#chat-input", "take your time")
	p.click("#send")
	id := p.wait("a running run", `document.querySelector("#run-state").dataset.status === "RUNNING" && document.querySelector("#run-state").dataset.runId`, 20*time.Second)
	p.click("#stop")
	p.wait("the run to end in the page", `document.querySelector("#run-state").dataset.last === "CANCELLED"`, 20*time.Second)
	got, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil || got.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("GetRun after Stop: %v, %v; want CANCELLED", got, err)
	}
}

// TestConsoleAnswers: a run waiting on a client-executed tool is answered
// through the tool's form, and one waiting on a confirmation through
// Approve; the agent goes on with each answer.
func TestConsoleAnswers(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	createSession(t, sc, "orders", "ask")
	p := openTab(t, console, sessionPath("orders", "u", "ask"))
	p.chatReady()
	p.fill("#chat-input", `where is it? call get_order {"order_id": "42"}`)
	p.click("#send")
	p.wait("the tool's form with its schema", `(() => { const f = document.querySelector("#pending .answer.tool"); return f && f.textContent.includes("order_id") && f.textContent.includes("The order's number.") })()`, 30*time.Second)
	p.shot("answer-tool")
	p.fill("#pending .answer.tool .kv-key", "status")
	p.fill("#pending .answer.tool .kv-value", "shipped")
	p.click("#pending .answer.tool .send-result")
	p.wait("the agent's use of the result", `[...document.querySelectorAll("#timeline .text")].some(e => e.textContent.includes("get_order returned") && e.textContent.includes("shipped"))`, 30*time.Second)

	p.fill("#chat-input", `call cancel_order {"order_id": "42"}`)
	p.click("#send")
	p.wait("the confirmation", `(() => { const f = document.querySelector("#pending .answer.confirm"); return f && f.textContent.includes("cancel_order") })()`, 30*time.Second)
	p.shot("answer-confirmation")
	p.click("#pending .answer.confirm .approve")
	p.wait("the confirmed call's result", `[...document.querySelectorAll("#timeline .call .resp pre")].some(e => e.textContent.includes('"cancelled"'))`, 30*time.Second)
	calls, err := sc.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "orders", UserId: "u", SessionId: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for _, c := range calls.GetToolCalls() {
		answered[c.GetTool()] = c.GetResponseSequence() > 0
	}
	for _, tool := range []string{"get_order", "request_confirmation", "cancel_order"} {
		if !answered[tool] {
			t.Errorf("%s has no response in the ledger: %v", tool, calls)
		}
	}
	p.click("#tab-tools")
	p.wait("the ledger", `document.querySelectorAll("#toolcalls details.toolcall").length >= 3`, 20*time.Second)
	p.click(`#toolcalls details.toolcall summary`)
	p.wait("a call's arguments and result", `document.querySelector("#toolcalls details.toolcall[open] .call pre")`, 20*time.Second)
	p.shot("tool-calls")
}

// TestConsoleAttach: a run a Go client started shows on the runs board,
// and attaching to it from there shows its events as they come.
func TestConsoleAttach(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "elsewhere")
	p := openTab(t, console, "runs?app=slow&user=u")
	p.wait("the empty board", `document.querySelector("#runs-stamp")?.textContent.includes("0 active")`, 20*time.Second)
	started, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "slow", UserId: "u", SessionId: "elsewhere", NewMessage: userText("from a Go client"),
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
	if err != nil {
		t.Fatal(err)
	}
	id := started.GetRun().GetRunId()
	row := fmt.Sprintf(`#runs-rows tr[data-run="%s"]`, id)
	p.wait("the run on the board", fmt.Sprintf(`document.querySelector('%s')`, row), 20*time.Second)
	p.shot("runs-board")
	p.click(row + " td.actions a")
	p.wait("the run's page", fmt.Sprintf(`location.pathname.endsWith("/runs/%s")`, id), 10*time.Second)
	p.wait("live text while it runs", `document.querySelector("#live-text")?.textContent.length > 0 && document.querySelector("#run-status")?.textContent === "RUNNING"`, 20*time.Second)
	p.shot("run-attached")
	p.wait("the end of the run", `document.querySelector("#run-status")?.textContent === "SUCCEEDED" && [...document.querySelectorAll("#timeline .author")].some(e => e.textContent === "slowpoke")`, 30*time.Second)
}

// TestConsoleState: a state change made in the page is an event of the
// session (AppendEvent with a state_delta), in its scope, and in the
// timeline.
func TestConsoleState(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "st")
	p := openTab(t, console, sessionPath("slow", "u", "st")+"/state")
	p.fill("#state-key", "user:lang")
	p.fill("#state-value", `"fr"`)
	p.click("#state-save")
	p.wait("the stored event", `document.querySelector("#state-result")?.textContent.includes("Stored as event #1")`, 20*time.Second)
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "slow", UserId: "u", SessionId: "st"})
	if err != nil || got.GetSession().GetState().GetFields()["user:lang"].GetStringValue() != "fr" {
		t.Fatalf("state after the page's change: %v, %v", got, err)
	}
	p.do(chromedp.Reload())
	p.wait("user:lang in the user scope", `[...document.querySelectorAll(".scope")].some(s => s.querySelector("h3").textContent.startsWith("User") && s.querySelector('tr[data-key="user:lang"]'))`, 20*time.Second)
	p.shot("state")
	p.click("#tab-chat")
	p.wait("the state change in the timeline", `document.querySelector('#timeline article[data-seq="1"] .state-delta')?.textContent.includes("user:lang")`, 20*time.Second)
}

// TestConsoleArtifacts: versions of an artifact are listed, previewed
// (JSON pretty-printed) and deleted one at a time.
func TestConsoleArtifacts(t *testing.T) {
	console, _, sc, ac := consoleServer(t)
	createSession(t, sc, "slow", "files")
	for _, body := range []string{`{"draft":1}`, `{"draft":2,"final":true}`} {
		part := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "application/json", Data: []byte(body)}}}
		if _, err := ac.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "slow", UserId: "u", SessionId: "files", Filename: "plan.json", Artifact: part}); err != nil {
			t.Fatal(err)
		}
	}
	p := openTab(t, console, sessionPath("slow", "u", "files")+"/artifacts?file=plan.json")
	p.wait("two versions", `document.querySelectorAll("#version-rows tr[data-version]").length === 2`, 20*time.Second)
	p.click(`#version-rows tr[data-version="2"] .preview`)
	p.wait("the pretty JSON", `document.querySelector("#artifact-preview pre")?.textContent.includes('"final": true')`, 20*time.Second)
	p.shot("artifacts")
	p.click(`#version-rows tr[data-version="1"] .delete-version`)
	p.click(`#version-rows tr[data-version="1"] .delete-version`)
	p.wait("one version left", `document.querySelectorAll("#version-rows tr[data-version]").length === 1 && document.querySelector('#version-rows tr[data-version="2"]')`, 20*time.Second)
	vs, err := ac.ListArtifactVersions(t.Context(), &servicev1.ListArtifactVersionsRequest{AppName: "slow", UserId: "u", SessionId: "files", Filename: "plan.json"})
	if err != nil || len(vs.GetVersions()) != 1 || vs.GetVersions()[0].GetVersion() != 2 {
		t.Fatalf("versions after the page deleted v1: %v, %v", vs, err)
	}
}

// TestConsoleImagePreview: an image artifact previews as an image, and the
// object URL that carried its bytes is revoked once it has loaded: the
// image stays shown, and the page does not keep a copy of every image it
// ever showed.
func TestConsoleImagePreview(t *testing.T) {
	console, _, sc, ac := consoleServer(t)
	createSession(t, sc, "slow", "pictures")
	// A 1x1 PNG.
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
		"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")
	part := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "image/png", Data: png}}}
	if _, err := ac.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "slow", UserId: "u", SessionId: "pictures", Filename: "dot.png", Artifact: part}); err != nil {
		t.Fatal(err)
	}
	p := openTab(t, console, sessionPath("slow", "u", "pictures")+"/artifacts?file=dot.png")
	p.click(`#version-rows tr[data-version="1"] .preview`)
	p.wait("the image decoded", `(() => { const i = document.querySelector("#artifact-preview img.preview-img"); return i && i.complete && i.naturalWidth === 1 })()`, 20*time.Second)
	p.do(chromedp.Evaluate[chromedp.Void](`fetch(document.querySelector("#artifact-preview img.preview-img").src).then(() => { window.previewURL = "live" }, () => { window.previewURL = "revoked" })`))
	if got := p.wait("the object URL's fate", `window.previewURL`, 20*time.Second); got != "revoked" {
		t.Fatalf("the preview's object URL is %s after the image loaded; want it revoked", got)
	}
	if !p.has(`document.querySelector("#artifact-preview img.preview-img").naturalWidth === 1`) {
		t.Fatal("the image is no longer shown once its URL is revoked")
	}
}

// TestConsoleOtherUser: a principal limited to its own user sees neither
// another user's sessions nor their runs, and the page says why rather
// than showing an empty list.
func TestConsoleOtherUser(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: [slow], users: [self]}
`)
	console, _, _, _ := consoleServer(t, "--auth-file", authFile)
	p := openTab(t, console, "apps")
	p.do(chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem("agentrunner.token", "alice-secret")`))
	p.do(chromedp.Navigate(console + "apps/slow/users/bob/sessions"))
	msg := p.text("#errors .error")
	if !strings.Contains(msg, "Not allowed") || !strings.Contains(msg, "PermissionDenied") || !strings.Contains(msg, "bob") {
		t.Errorf("bob's sessions as alice: %q, want the server's PERMISSION_DENIED naming bob", msg)
	}
	if n := p.wait("rows", `String(document.querySelectorAll("#session-rows tr[data-session]").length)`, 5*time.Second); n != "0" {
		t.Errorf("%s of bob's sessions shown to alice", n)
	}
	p.shot("permission-denied")
	p.do(chromedp.Navigate(console + "runs?app=slow&user=bob"))
	if msg := p.text("#errors .error"); !strings.Contains(msg, "PermissionDenied") {
		t.Errorf("bob's runs as alice: %q", msg)
	}
	p.do(chromedp.Navigate(console + "runs?app=slow&all=1"))
	if msg := p.text("#errors .error"); !strings.Contains(msg, "PermissionDenied") {
		t.Errorf("every user's runs as alice: %q", msg)
	}
	p.do(chromedp.Navigate(console + "apps/slow/users/alice/sessions"))
	p.wait("alice's own (empty) list", `document.querySelector("#session-rows")?.textContent.includes("No sessions yet") && !document.querySelector("#errors .error")`, 20*time.Second)
}

// TestConsolePrefix: behind --http-prefix, a deep link into a session
// loads the page and its data under the prefix, and the copied grpcurl
// command says the gRPC address is not this one.
func TestConsolePrefixDeepLink(t *testing.T) {
	console, _, sc, _ := consoleServer(t, "--http-prefix", "/agentrunner")
	if !strings.HasSuffix(console, "/agentrunner/") {
		t.Fatalf("console URL %q lacks the prefix", console)
	}
	createSession(t, sc, "slow", "deep")
	p := openTab(t, console, sessionPath("slow", "u", "deep")+"/usage")
	p.wait("the usage tab of the session", `document.querySelector("#session-id")?.textContent === "deep" && document.querySelector("#tab-usage.active") && document.querySelector("#run-usage")`, 20*time.Second)
	p.click("#tab-chat")
	p.wait("the chat tab under the prefix", `location.pathname === "/agentrunner/apps/slow/users/u/sessions/deep" && document.querySelector("#chat-input")`, 20*time.Second)
	p.click("#nav-usage")
	p.wait("the usage view", `document.querySelector("#usage-total")`, 20*time.Second)
	p.click("#nav-apps")
	p.click("section.card .rpc")
	cmd := p.text("#rpc-grpcurl")
	if !strings.Contains(cmd, "localhost:50051 agentrunner.service.v1.RunnerService/ListApps") {
		t.Errorf("grpcurl under a prefix: %q", cmd)
	}
	p.wait("the prefix hint", `document.querySelector("#rpc-panel.open .hint")?.textContent.includes("prefix")`, 5*time.Second)
}

// TestConsoleCopyAsRPC: the runs board's "Copy as RPC" gives a grpcurl
// command for this very server (its HTTP listener speaks gRPC over h2c),
// and Go, Python and TypeScript. The command is saved under .tmp/ for CI
// and, when grpcurl is at hand, run.
func TestConsoleCopyAsRPC(t *testing.T) {
	console, _, _, _ := consoleServer(t)
	p := openTab(t, console, "runs?app=slow&user=u")
	p.wait("the board", `document.querySelector("#runs-stamp")?.textContent.includes("active")`, 20*time.Second)
	p.click("section.card .row.head .rpc")
	cmd := p.text("#rpc-grpcurl")
	host := strings.TrimSuffix(strings.TrimPrefix(console, "http://"), "/")
	want := fmt.Sprintf(`grpcurl -plaintext -d '{"appName":"slow","userId":"u","pageSize":50,"statuses":["RUN_STATUS_PENDING","RUN_STATUS_RUNNING","RUN_STATUS_INPUT_REQUIRED"]}' %s agentrunner.service.v1.RunnerService/ListRuns`, host)
	if cmd != want {
		t.Errorf("grpcurl command:\n got %s\nwant %s", cmd, want)
	}
	if clip := p.text("#clipboard"); clip != cmd {
		t.Errorf("copied %q, shown %q", clip, cmd)
	}
	for _, lang := range []string{"go", "python", "typescript"} {
		if s := p.text("#rpc-" + lang); !strings.Contains(s, "ListRuns") && !strings.Contains(s, "listRuns") {
			t.Errorf("%s snippet without the method: %s", lang, s)
		}
	}
	p.shot("copy-as-rpc")
	saveGrpcurl(t, cmd)

	// A user id with a backquote and quotes: the Go snippet stays Go (a
	// raw string literal broke on the backquote), the others carry it.
	odd := "u`'\"x"
	p = openTab(t, console, "runs?app=slow&user="+url.QueryEscape(odd))
	p.wait("the board", `document.querySelector("#runs-stamp")?.textContent.includes("active")`, 20*time.Second)
	p.click("section.card .row.head .rpc")
	goSnippet := p.text("#rpc-go")
	var line string
	for _, l := range strings.Split(goSnippet, "\n") {
		if strings.Contains(l, "protojson.Unmarshal") {
			line = l
		}
	}
	src := "package p\nfunc f() error {\n" + line + "\nreturn nil\n}\n"
	if _, err := parser.ParseFile(token.NewFileSet(), "snippet.go", src, 0); err != nil || line == "" {
		t.Errorf("the Go snippet for user %q does not parse: %v\n%s", odd, err, goSnippet)
	}
	if py := p.text("#rpc-python"); !strings.Contains(py, "u`") {
		t.Errorf("the Python snippet lost the user id: %s", py)
	}
}

// saveGrpcurl keeps the command in .tmp/console-grpcurl.sh and runs it
// against the test's server with grpcurl, which CI installs in .tmp/bin
// (the test step): there a missing grpcurl fails the test, elsewhere it
// only skips the run.
func saveGrpcurl(t *testing.T, cmd string) {
	t.Helper()
	root := filepath.Join("..", "..")
	if err := os.MkdirAll(filepath.Join(root, ".tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".tmp", "console-grpcurl.sh"), []byte("#!/bin/sh\n# written by TestConsoleCopyAsRPC\n"+cmd+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("grpcurl")
	if err != nil {
		if bin, err = filepath.Abs(filepath.Join(root, ".tmp", "bin", "grpcurl")); err == nil {
			_, err = os.Stat(bin)
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("grpcurl is not installed (the test step installs it in .tmp/bin): %v", err)
		}
		t.Log("grpcurl not installed: the command was saved, not run")
		return
	}
	sh := exec.CommandContext(t.Context(), "sh", "-c", strings.Replace(cmd, "grpcurl", bin, 1))
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "{") {
		t.Errorf("the copied command failed: %v\n%s", err, out)
	}
}

// TestConsoleLiveSession: a session open in the page shows a run another
// client starts on it, live, without a reload.
func TestConsoleLiveSession(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "shared")
	p := openTab(t, console, sessionPath("slow", "u", "shared"))
	p.wait("the empty timeline", `document.querySelector("#timeline")?.dataset.loaded && document.querySelectorAll("#timeline article").length === 0`, 20*time.Second)
	_, err := rc.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: "slow", UserId: "u", SessionId: "shared", NewMessage: userText("said elsewhere"),
		RunConfig: &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}})
	if err != nil {
		t.Fatal(err)
	}
	p.wait("the other client's message", `[...document.querySelectorAll("#timeline .text")].some(e => e.textContent === "said elsewhere")`, 20*time.Second)
	p.wait("its answer streaming", `document.querySelector("#live-text")?.textContent.length > 0`, 20*time.Second)
	p.wait("its stored answer", `[...document.querySelectorAll("#timeline .author")].some(e => e.textContent === "slowpoke")`, 30*time.Second)
	if n := p.wait("streams", `document.body.dataset.streams || "0"`, 5*time.Second); n > "2" {
		t.Errorf("%s streams open", n)
	}
}

// TestConsoleReconnect: a session open in the page while the server
// restarts says it lost the server, then that it is back, and shows what
// was stored meanwhile.
func TestConsoleReconnect(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	browser(t)
	addr, console, _, stop := startConsole(t, "--data", data)
	createSession(t, servicev1.NewSessionServiceClient(dial(t, addr)), "slow", "restart")
	p := openTab(t, console, sessionPath("slow", "u", "restart"))
	p.wait("the loaded chat", `document.querySelector("#timeline")?.dataset.loaded`, 20*time.Second)
	stop()
	p.wait("the lost server", `document.querySelector("#disconnected")`, 20*time.Second)
	httpAddr := strings.TrimSuffix(strings.TrimPrefix(console, "http://"), "/")
	addr, _, _, _ = startConsole(t, "--data", data, "--http-addr", httpAddr)
	sc2 := servicev1.NewSessionServiceClient(dial(t, addr))
	ev := &agentrunnerv1.Event{Author: "user", InvocationId: "elsewhere", Content: userText("while you were away")}
	if _, err := sc2.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "slow", UserId: "u", SessionId: "restart", Event: ev}); err != nil {
		t.Fatal(err)
	}
	p.wait("the reconnection", `document.querySelector("#reconnected")`, 20*time.Second)
	p.wait("the event stored meanwhile", `[...document.querySelectorAll("#timeline .text")].some(e => e.textContent === "while you were away")`, 20*time.Second)
}

// TestConsoleOddIDs: ids may hold "/" and "%" (the server takes any
// printable text): the console's links encode each as one segment, so
// that a session "a/b%41" of the user "100%" opens as itself, from the
// list and from a deep link, and nothing is stuck loading.
func TestConsoleOddIDs(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	const user, sid = "100%", "a/b%41"
	if _, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "slow", UserId: user, SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	p := openTab(t, console, "apps/slow/users/"+url.PathEscape(user)+"/sessions")
	p.wait("the session in the list", `document.querySelector('#session-rows tr[data-session="a/b%41"] a')`, 20*time.Second)
	p.click(`#session-rows tr[data-session="a/b%41"] a`)
	p.wait("the session's page", `document.querySelector("#session-id")?.textContent === "a/b%41" && document.querySelector("#chat-input")`, 20*time.Second)
	p.click("#nav-sessions")
	p.wait("the user's list again", `document.querySelector('#session-rows tr[data-session="a/b%41"]')`, 20*time.Second)
}
