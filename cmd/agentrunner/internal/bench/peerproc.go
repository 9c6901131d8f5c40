package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"time"
)

// peerReady is the line the peer (examples/peer/adkgo) prints on stdout
// once it serves, followed by its base URL.
const peerReady = "listening on "

// readyWriter is a started peer's stdout and stderr: it keeps the output
// for the log tail, and sends the base URL of the first ready line on
// url. exec calls Write from one goroutine at a time when Stdout and
// Stderr are the same writer.
type readyWriter struct {
	buf  *logBuffer
	line []byte
	url  chan string
	sent bool
}

func (rw *readyWriter) Write(b []byte) (int, error) {
	rw.buf.Write(b)
	if rw.sent {
		return len(b), nil
	}
	rw.line = append(rw.line, b...)
	for {
		i := bytes.IndexByte(rw.line, '\n')
		if i < 0 {
			return len(b), nil
		}
		if u, ok := strings.CutPrefix(strings.TrimSpace(string(rw.line[:i])), peerReady); ok {
			rw.sent, rw.line = true, nil
			rw.url <- u
			return len(b), nil
		}
		rw.line = rw.line[i+1:]
	}
}

// startPeer runs the peer binary on a free loopback port with the given
// session service (memory; sqlite, its file in dir; postgres, on the
// database of dsn), serving app, and
// waits for its ready line. The result is a serverProc, so that its CPU
// and memory are read from /proc as agentrunner's are; its addr is the
// base URL.
func startPeer(ctx context.Context, binary, sessions, dir, dsn, app string, extra ...string) (*serverProc, error) {
	p := &serverProc{logs: &logBuffer{}}
	args := []string{"--addr", "127.0.0.1:0", "--sessions", sessions, "--dir", dir, "--app", app}
	if dsn != "" {
		args = append(args, "--dsn", dsn)
	}
	p.cmd = exec.Command(binary, append(args, extra...)...)
	p.cmd.SysProcAttr = childAttr()
	// Never a model key: the peer's model is local, and stays so.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOOGLE_API_KEY" && k != "GEMINI_API_KEY" && k != "GOOGLE_GENAI_USE_VERTEXAI" {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	rw := &readyWriter{buf: p.logs, url: make(chan string, 1)}
	p.cmd.Stdout, p.cmd.Stderr = rw, rw
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start peer %s: %w", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case u := <-rw.url:
		p.addr, p.debug = u, u
		go func() { <-exited }() // reap when it ends
		return p, nil
	case err := <-exited:
		return nil, fmt.Errorf("peer exited before serving (%v):\n%s", err, p.logs)
	case <-timer.C:
		p.kill()
		return nil, fmt.Errorf("peer %s printed no %q line within 30s:\n%s", binary, peerReady, p.logs)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// restClient drives a peer's adk-go REST API as adk web's front end does:
// sessions created by id, POST /run for a run whose events come back as
// one JSON array, POST /run_sse with streaming on for a run whose events
// (partial ones included) come as server-sent events.
type restClient struct {
	base string // e.g. http://127.0.0.1:1234/api
	app  string
	http *http.Client
}

func newRESTClient(base, app string) *restClient {
	return &restClient{base: strings.TrimSuffix(base, "/") + "/api", app: app, http: &http.Client{
		// One keep-alive connection per concurrent session: with the
		// default two idle connections per host, 256 sessions would open
		// and close a connection per run.
		Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true},
	}}
}

func (c *restClient) runner(int) runClient { return c }

func (c *restClient) close() { c.http.CloseIdleConnections() }

// createSession creates the session id of user.
func (c *restClient) createSession(ctx context.Context, user, id string) error {
	u := fmt.Sprintf("%s/apps/%s/users/%s/sessions/%s", c.base, url.PathEscape(c.app), url.PathEscape(user), url.PathEscape(id))
	resp, err := c.post(ctx, u, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// post sends body as JSON and fails on any status but 200, with the
// start of the response body in the error.
func (c *restClient) post(ctx context.Context, u string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", u, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// restEvent is what the bench reads of an adk-go REST event; Error is
// the payload of an SSE "event: error".
type restEvent struct {
	Partial      bool   `json:"partial"`
	ErrorCode    string `json:"errorCode"`
	ErrorMessage string `json:"errorMessage"`
	Error        string `json:"error"`
}

func (e restEvent) err() error {
	switch {
	case e.Error != "":
		return errors.New(e.Error)
	case e.ErrorCode != "" || e.ErrorMessage != "":
		return fmt.Errorf("event error %s: %s", e.ErrorCode, e.ErrorMessage)
	}
	return nil
}

// run is one run of text in session; see restClient.
func (c *restClient) run(ctx context.Context, user, session, text string, sse bool) (runStats, error) {
	body := map[string]any{
		"appName": c.app, "userId": user, "sessionId": session,
		"newMessage": map[string]any{"role": "user", "parts": []map[string]string{{"text": text}}},
	}
	path := "/run"
	if sse {
		body["streaming"], path = true, "/run_sse"
	}
	start := time.Now()
	resp, err := c.post(ctx, c.base+path, body)
	if err != nil {
		return runStats{}, err
	}
	defer resp.Body.Close()
	st := runStats{persisted: 1} // the user event is stored, not returned
	count := func(e restEvent) error {
		if st.msgs == 0 {
			st.first = time.Since(start)
		}
		st.msgs++
		if e.Partial {
			st.p++
		} else {
			st.persisted++
		}
		return e.err()
	}
	if sse {
		err = readSSE(resp.Body, count)
	} else {
		err = readArray(resp.Body, count)
	}
	if err != nil {
		return runStats{}, err
	}
	st.latency = time.Since(start)
	if st.msgs == 0 {
		return runStats{}, errors.New("run returned no event")
	}
	return st, nil
}

// readArray reads /run's JSON array of events.
func readArray(r io.Reader, each func(restEvent) error) error {
	var events []restEvent
	if err := json.NewDecoder(r).Decode(&events); err != nil {
		return fmt.Errorf("decode events: %w", err)
	}
	for _, e := range events {
		if err := each(e); err != nil {
			return err
		}
	}
	return nil
}

// readSSE reads /run_sse's events, one "data:" line each ("event: error"
// comes before an error's data line, which restEvent.Error reads).
func readSSE(r io.Reader, each func(restEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var e restEvent
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &e); err != nil {
			return fmt.Errorf("decode event: %w", err)
		}
		if err := each(e); err != nil {
			return err
		}
	}
	return sc.Err()
}
