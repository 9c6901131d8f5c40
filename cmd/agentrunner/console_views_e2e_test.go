package main

// Browser tests of the console's conversation view, search, state
// history, users list, narrow layout, dark mode, shortcuts and copy
// buttons (the helpers are console_e2e_test.go's).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
)

// convoOrder is the texts of the conversation's messages, top to bottom,
// each as "author: text".
const convoOrder = `[...document.querySelectorAll("#conversation .msg")].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top).map((m) => (m.querySelector(".who b")?.textContent ?? "") + ": " + [...m.querySelectorAll(".text")].map((t) => t.textContent).join(""))`

// TestConsoleConversation: the conversation shows the question above its
// answer; the header counts the events as they come; Stop leaves no
// failure and keeps, marked stopped, what the run had said.
func TestConsoleConversation(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "talk")
	p := openTab(t, console, sessionPath("slow", "u", "talk"))
	p.chatReady()
	p.fill("#chat-input", "hello there")
	p.click("#send")
	p.wait("the answer in the conversation", `document.querySelector("#run-state").dataset.status === "" && [...document.querySelectorAll("#conversation .msg.agent .text")].some((e) => e.textContent.length > 0)`, 30*time.Second)
	order := p.wait("the conversation's order", convoOrder+`.join("\n")`, 5*time.Second)
	lines := strings.Split(order, "\n")
	if len(lines) != 2 || lines[0] != "user: hello there" || !strings.HasPrefix(lines[1], "slowpoke: ") {
		t.Fatalf("conversation, top to bottom:\n%s\nwant the question, then slowpoke's answer", order)
	}
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "slow", UserId: "u", SessionId: "talk"})
	if err != nil {
		t.Fatal(err)
	}
	n := got.GetSession().GetLastSequence()
	p.wait("the header's event count, without a reload", fmt.Sprintf(`document.querySelector("#session-meta").textContent.includes(" %d events")`, n), 10*time.Second)
	p.shot("conversation")

	p.fill("#chat-input", "take your time")
	p.click("#send")
	streamed := p.wait("streamed text", `(() => { const l = document.querySelector("#live-text"); return l && l.textContent.length > 20 && document.querySelector("#run-state").dataset.status === "RUNNING" ? l.textContent : false })()`, 20*time.Second)
	p.click("#stop")
	said := p.wait("the stopped run's text in the conversation", `(() => { const m = [...document.querySelectorAll("#conversation .msg.stopped")].pop(); return m && m.querySelector(".stopped-tag") ? m.querySelector(".text")?.textContent ?? "" : false })()`, 20*time.Second)
	if !strings.HasPrefix(said, streamed) {
		t.Errorf("streamed %q before Stop; the conversation keeps %q: want what was streamed, at least", streamed, said)
	}
	if p.has(`document.querySelector("#errors .error")`) {
		t.Errorf("Stop put an error on the page: %s", p.text("#errors"))
	}
	if last := p.wait("the run's end", `document.querySelector("#run-state").dataset.last`, 10*time.Second); last != "CANCELLED" {
		t.Errorf("run state after Stop: %s", last)
	}
	p.shot("conversation-stopped")
}

// seedSearchSession stores a session of n events in the bbolt file data,
// before a server opens it: questions and answers, with one needle text
// at needle, a call of lookup_order at call and a failed model call at
// failed.
func seedSearchSession(t testing.TB, data string, k store.SessionKey, n, needle, call, failed int) {
	t.Helper()
	st, err := boltstore.Open(data, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		ev := &agentrunnerv1.Event{Author: "user", InvocationId: fmt.Sprintf("turn-%d", i/2), Content: userText(fmt.Sprintf("question %d: where is my order?", i))}
		if i%2 == 0 {
			ev = &agentrunnerv1.Event{Author: "clerk", InvocationId: fmt.Sprintf("turn-%d", i/2),
				Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf("answer %d: it ships Friday.", i)}}}}}
		}
		switch i {
		case needle:
			ev.Content = userText("a needle in the haystack")
		case call:
			ev.Content = &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "lookup_order"}}}}}
		case failed:
			ev.Content, ev.ErrorCode, ev.ErrorMessage = nil, "MODEL_ERROR", "the model is overloaded"
		}
		if _, err := st.AppendEvent(t.Context(), k, ev); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConsoleSearch: in a session of 10,000 events, search finds an event
// by its text, by the tool it calls and as an error, and a hit opens the
// event in the timeline.
func TestConsoleSearch(t *testing.T) {
	browser(t)
	data := filepath.Join(t.TempDir(), "search.db")
	k := store.SessionKey{App: "slow", User: "u", Session: "long"}
	const needle, call, failed = 1234, 5002, 8888
	seedSearchSession(t, data, k, 10_000, needle, call, failed)
	_, console, _, _ := startConsole(t, "--data", data)
	p := openTab(t, console, sessionPath(k.App, k.User, k.Session))
	p.chatReady()
	p.click("#show-inspector")
	find := func(what string, set func(), seq int) {
		t.Helper()
		set()
		p.click("#search-go")
		p.wait("the "+what+" hit", fmt.Sprintf(`document.querySelector('#search-list li.search-hit[data-seq="%d"]') && document.querySelectorAll("#search-list li").length === 1 && !document.querySelector("#search-more")`, seq), 30*time.Second)
		p.click(fmt.Sprintf(`#search-list li[data-seq="%d"] a`, seq))
		p.wait("the hit in the timeline", fmt.Sprintf(`document.querySelector('#timeline article#ev-%d.picked')`, seq), 20*time.Second)
	}
	find("text", func() { p.fill("#search-text", "NEEDLE") }, needle)
	viewShot(p, "search")
	find("tool", func() { p.fill("#search-text", ""); p.fill("#search-function", "lookup_order") }, call)
	find("error", func() { p.fill("#search-function", ""); p.click("#search-errors") }, failed)
}

// viewShot is tab.shot of the window only: a full-page screenshot
// resizes the window to the page, which moves scrolled lists.
func viewShot(p *tab, name string) {
	p.t.Helper()
	if os.Getenv("CONSOLE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestConsoleStateHistory: a state key's history lists each event that
// changed it, with the diff it made.
func TestConsoleStateHistory(t *testing.T) {
	console, _, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "hist")
	for _, v := range []any{"red", map[string]any{"shade": "dark", "hue": 1}, map[string]any{"shade": "light", "hue": 1, "alpha": 0.5}} {
		st, err := structpb.NewStruct(map[string]any{"color": v})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.AppendEvent(t.Context(), &servicev1.AppendEventRequest{AppName: "slow", UserId: "u", SessionId: "hist",
			Event: &agentrunnerv1.Event{Author: "user", Actions: &agentrunnerv1.EventActions{StateDelta: st}}}); err != nil {
			t.Fatal(err)
		}
	}
	p := openTab(t, console, sessionPath("slow", "u", "hist")+"/state")
	p.click(`tr[data-key="color"] button.history`)
	p.wait("three changes", `document.querySelectorAll("#history-rows tr[data-seq]").length === 3`, 20*time.Second)
	diffs := p.wait("the diffs", `[...document.querySelectorAll("#history-rows tr[data-seq] .diff")].map((d) => [...d.children].map((l) => l.textContent).join(" | ")).join("\n")`, 5*time.Second)
	want := `+ "red"
- "red" | + {"hue":1,"shade":"dark"}
- shade: "dark" | + shade: "light" | + alpha: 0.5`
	if diffs != want {
		t.Errorf("diffs:\n%s\nwant:\n%s", diffs, want)
	}
	p.shot("state-history")
}

// TestConsoleUsers: an admin lists an app's users; anyone else is refused.
func TestConsoleUsers(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: [slow], users: [self]}
  - {name: root, token_sha256: `+sha("root-secret")+`, admin: true}
`)
	browser(t)
	addr, console, _, _ := startConsole(t, "--auth-file", authFile)
	sc := servicev1.NewSessionServiceClient(dial(t, addr))
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer root-secret")
	for _, k := range [][2]string{{"alice", "a1"}, {"alice", "a2"}, {"bob", "b1"}} {
		if _, err := sc.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: "slow", UserId: k[0], SessionId: k[1]}); err != nil {
			t.Fatal(err)
		}
	}
	signIn := func(tok string) *tab {
		p := openTab(t, console, "users?app=slow")
		p.wait("the sign-in form", `document.querySelector("#signin.open #token")`, 20*time.Second)
		p.fill("#token", tok)
		p.click("#signin-submit")
		return p
	}
	alice := signIn("alice-secret")
	alice.wait("the refusal", `document.querySelector("#users-denied") && document.querySelector("#errors .error")?.textContent.includes("Not allowed")`, 20*time.Second)
	if alice.has(`document.querySelector("#user-rows tr[data-user]")`) {
		t.Error("a non-admin sees users")
	}
	root := signIn("root-secret")
	got := root.wait("the users", `(() => { const r = [...document.querySelectorAll("#user-rows tr[data-user]")]; return r.length === 2 && r.map((x) => x.dataset.user + "=" + x.children[1].textContent).join(",") })()`, 20*time.Second)
	if got != "alice=2,bob=1" {
		t.Errorf("users: %s, want alice=2,bob=1", got)
	}
	root.shot("users")
}

// noSideScroll is true when the page is no wider than its window.
const noSideScroll = `document.documentElement.scrollWidth <= window.innerWidth && document.body.scrollWidth <= window.innerWidth`

// TestConsoleNarrow: at 360 px wide every view fits, with no horizontal
// scroll, and the chat shows one pane at a time.
func TestConsoleNarrow(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "narrow-session-with-a-rather-long-identifier")
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "narrow-session-with-a-rather-long-identifier",
		NewMessage: userText("a long word: " + strings.Repeat("x", 120) + " and a path /var/lib/agentrunner/" + strings.Repeat("deep/", 20))})
	p := openTab(t, console, "apps")
	p.do(chromedp.EmulateViewport(360, 740))
	for _, path := range []string{"apps", "apps/slow/users/u/sessions", sessionPath("slow", "u", "narrow-session-with-a-rather-long-identifier"), "runs?app=slow&user=u", "usage?app=slow&user=u", "users?app=slow"} {
		p.do(chromedp.Navigate(console + path))
		p.wait(path+" loaded", `document.querySelector("#view") && !document.querySelector("#view > p.hint")`, 20*time.Second)
		if strings.Contains(path, "/sessions/") {
			p.chatReady()
			p.wait("one pane", `getComputedStyle(document.querySelector(".inspector-pane")).display === "none" && document.querySelector("#conversation .msg")`, 10*time.Second)
			p.shot("narrow-conversation")
			if !p.has(noSideScroll) {
				t.Errorf("%s, conversation: the page is %s px wide in a 360 px window", path, p.wait("width", `String(document.documentElement.scrollWidth)`, time.Second))
			}
			p.click("#show-inspector")
			p.wait("the inspector", `getComputedStyle(document.querySelector(".convo-pane")).display === "none" && document.querySelector("#timeline article.event")`, 10*time.Second)
		}
		if !p.has(noSideScroll) {
			t.Errorf("%s: the page is %s px wide in a 360 px window", path, p.wait("width", `String(document.documentElement.scrollWidth)`, time.Second))
		}
	}
}

// TestConsoleDarkMode: the page follows prefers-color-scheme, and the
// toggle overrides it and is remembered.
func TestConsoleDarkMode(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "dark")
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "dark", NewMessage: userText("hello in the dark")})
	p := openTab(t, console, "apps")
	bg := `getComputedStyle(document.querySelector(".card")).backgroundColor`
	p.wait("the light page", `document.querySelector(".card")`, 20*time.Second)
	if got := p.wait("light card", bg, 5*time.Second); got != "rgb(255, 255, 255)" {
		t.Errorf("card background without dark preference: %s", got)
	}
	p.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	p.do(chromedp.Navigate(console + sessionPath("slow", "u", "dark")))
	p.chatReady()
	if got := p.wait("dark card", bg, 5*time.Second); got != "rgb(26, 32, 41)" {
		t.Errorf("card background with prefers-color-scheme dark: %s", got)
	}
	p.shot("dark")
	p.click("#theme-toggle")
	if got := p.wait("light again", bg+` === "rgb(255, 255, 255)" && localStorage.getItem("agentrunner.theme")`, 5*time.Second); got != "light" {
		t.Errorf("toggle remembered %q", got)
	}
	p.do(chromedp.Reload())
	p.chatReady()
	if got := p.wait("the toggle kept", bg, 5*time.Second); got != "rgb(255, 255, 255)" {
		t.Errorf("after a reload the card is %s; the toggle chose light", got)
	}
}

// TestConsoleShortcutsAndCopy: "/" goes to the search, "c" to the
// composer, and an event's raw JSON copies.
func TestConsoleShortcutsAndCopy(t *testing.T) {
	console, rc, sc, _ := consoleServer(t)
	createSession(t, sc, "slow", "keys")
	runToEnd(t, rc, &servicev1.RunRequest{AppName: "slow", UserId: "u", SessionId: "keys", NewMessage: userText("copy me")})
	p := openTab(t, console, sessionPath("slow", "u", "keys"))
	p.chatReady()
	p.wait("the events", `document.querySelector("#timeline article#ev-1")`, 20*time.Second)
	p.do(chromedp.KeyEvent("/"))
	p.wait("the search field focused", `document.activeElement?.id === "search-text"`, 5*time.Second)
	p.do(chromedp.KeyEvent("\x1b"))
	p.do(chromedp.KeyEvent("c"))
	p.wait("the composer focused", `document.activeElement?.id === "chat-input"`, 5*time.Second)
	p.click(`#timeline article#ev-1 details.raw button.copy`)
	got := p.wait("the copied JSON", `document.querySelector("#clipboard").textContent`, 5*time.Second)
	if !strings.Contains(got, `"copy me"`) || !strings.Contains(got, `"author": "user"`) {
		t.Errorf("copied %q: want event 1's JSON", got)
	}
}
