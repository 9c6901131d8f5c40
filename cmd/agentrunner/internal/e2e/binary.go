package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is the Target of a built agentrunner, started as a process.
type Binary struct {
	Path string // the executable
}

// BuildBinary builds cmd/agentrunner with `go build` into dir. A test
// binary builds it once, in its top test's temp dir (the go command's
// cache makes a build of an unchanged tree quick).
func BuildBinary(t *testing.T, dir string) Binary {
	t.Helper()
	path := filepath.Join(dir, "agentrunner")
	out, err := exec.Command("go", "build", "-o", path, "github.com/agentrunner/agentrunner/cmd/agentrunner").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return Binary{Path: path}
}

// servingLine is the line serve logs once it listens: the gRPC address and
// the HTTP listener's URL ("" when off).
var servingLine = regexp.MustCompile(`msg=serving addr=(\S+) console=(\S+)`)

// Serve starts the binary and waits for its serving line. Stopping it
// sends SIGTERM, as an operator or a supervisor would.
func (b Binary) Serve(t *testing.T, args ...string) *Server {
	t.Helper()
	cmd := exec.Command(b.Path, append(ServeFlags(), args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.Discard, pw
	logs := watchLogs(pr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		exited <- err
	}()
	var m []string
	select {
	case m = <-logs.serving:
	case err := <-exited:
		t.Fatalf("agentrunner exited before serving: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("agentrunner logged no serving line within 60s:\n%s", logs)
	}
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM) // fails only if it has ended: exited says how
		select {
		case err := <-exited:
			return err
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("agentrunner did not end within 60s of SIGTERM")
		}
	}
	return NewServer(t, m[1], strings.Trim(m[2], `"`), stop, logs.String)
}

// CLI runs the binary with args and no input.
func (b Binary) CLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	cmd := exec.Command(b.Path, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("agentrunner %q: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// logWatcher keeps a process's log and hands out its serving line's
// submatches once it appears.
type logWatcher struct {
	serving chan []string
	mu      sync.Mutex
	text    strings.Builder
}

func watchLogs(r io.Reader) *logWatcher {
	w := &logWatcher{serving: make(chan []string, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			w.mu.Lock()
			w.text.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil && !sent {
				w.serving <- m
				sent = true
			}
		}
		// Keep draining after an error, so the process never blocks.
		_, _ = io.Copy(io.Discard, r)
	}()
	return w
}

func (w *logWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.text.String()
}
