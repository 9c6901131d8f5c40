//go:build linux

package chat_test

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentrunner/agentrunner/cmd/agentrunner/internal/chat"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// openPTY opens a pseudo-terminal: the chat gets the terminal's side
// (slave), the test types into and reads the screen from the other
// (master), as a terminal emulator would. Linux only (/dev/ptmx), which
// is what CI runs.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr == nil { // unlockpt
			n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN) // ptsname
		}
	}); err != nil || ioErr != nil {
		t.Fatalf("pty: %v %v", err, ioErr)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// termChat is one run of `agentrunner chat` in a terminal.
type termChat struct {
	t      *testing.T
	master *os.File
	// probe is the chat's terminal opened once more, for the test to
	// read its mode.
	probe  *os.File
	screen *syncBuffer // everything the terminal showed
	stderr *syncBuffer
	done   chan error
}

func startTermChat(t *testing.T, args ...string) *termChat {
	t.Helper()
	master, slave := openPTY(t)
	probe, err := os.OpenFile(slave.Name(), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := &termChat{t: t, master: master, probe: probe, screen: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(c.screen, master) // ends when the terminal closes
	}()
	go func() { c.done <- chat.Main(t.Context(), args, slave, slave, c.stderr) }()
	t.Cleanup(func() {
		// t.Context() is cancelled by now, which ends the chat.
		select {
		case <-c.done:
		case <-time.After(waitFor):
			t.Errorf("chat did not end within %v", waitFor)
		}
		probe.Close()
		slave.Close()
		master.Close()
		<-copied
	})
	return c
}

// typeKeys sends keys as the terminal would: a key, a line and Enter
// ("\r"), or a paste.
func (c *termChat) typeKeys(keys string) {
	c.t.Helper()
	if _, err := io.WriteString(c.master, keys); err != nil {
		c.t.Fatalf("typing: %v", err)
	}
}

// expect waits until the screen, with its line ends made "\n", matches
// every pattern, failing after a bound.
func (c *termChat) expect(patterns ...string) {
	c.t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		screen := strings.ReplaceAll(c.screen.String(), "\r\n", "\n")
		var missing []string
		for _, p := range patterns {
			if !regexp.MustCompile(p).MatchString(screen) {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return
		}
		select {
		case err := <-c.done:
			c.done <- err
			c.t.Fatalf("chat ended (%v) before the screen matched %q\nscreen:\n%.3000s\nstderr:\n%s", err, missing, screen, c.stderr)
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("screen did not match %q within %v\nscreen (its end):\n%s\nstderr:\n%s", missing, waitFor, tail(screen, 3000), c.stderr)
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's output
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestTerminalLongLine: a 20,000-character line typed into a terminal is
// stored whole. In the terminal's own line mode it was cut at 4,095 bytes.
func TestTerminalLongLine(t *testing.T) {
	addr, _ := startServer(t)
	c := startTermChat(t, "--addr", addr, "--app", "slow", "--user", "lu", "--session", "long")
	c.expect(`new session long of app slow`, `you> $`)
	var b strings.Builder
	for b.Len() < 20000 {
		fmt.Fprintf(&b, "word%05d ", b.Len())
	}
	line := b.String()[:19999] + "!" // the chat trims spaces at the ends
	c.typeKeys(line + "\r")
	c.expect(`\[snail\] heard 20000 characters\n  \(events #1-#2\)\nyou> $`)
	if got := userMessages(t, addr, "slow", "lu", "long"); len(got) != 1 || got[0] != line {
		t.Fatalf("stored %d messages of %d characters in all; want the 20,000-character line whole", len(got), len(strings.Join(got, "")))
	}
}

// TestTerminalPasteIsOneMessage: a bracketed paste of several lines (CR,
// CRLF) is one message, Enter inside it does not send; a line that ends
// with a backslash goes on on the next.
func TestTerminalPasteIsOneMessage(t *testing.T) {
	addr, _ := startServer(t)
	c := startTermChat(t, "--addr", addr, "--app", "slow", "--user", "pa", "--session", "paste")
	c.expect(`you> $`)
	c.typeKeys("\x1b[200~first line\rsecond\r\nthird\x1b[201~\r")
	c.expect(`\[snail\] heard 23 characters\n  \(events #1-#2\)\nyou> $`)
	c.typeKeys("one \\\r")
	c.expect(`\n\.\.\. $`)
	c.typeKeys("two\r")
	c.expect(`\(events #3-#4\)\nyou> $`)
	want := []string{"first line\nsecond\nthird", "one \ntwo"}
	if got := userMessages(t, addr, "slow", "pa", "paste"); !slices.Equal(got, want) {
		t.Fatalf("stored messages %q, want %q", got, want)
	}
}

// TestTerminalCtrlCAtThePrompt: Ctrl-C clears what was typed and the chat
// goes on; Ctrl-D on an empty line ends it without an error.
func TestTerminalCtrlCAtThePrompt(t *testing.T) {
	addr, _ := startServer(t)
	c := startTermChat(t, "--addr", addr, "--app", "slow", "--user", "cc", "--session", "clear")
	c.expect(`you> $`)
	c.typeKeys("never mind")
	c.expect(`you> never mind$`)
	c.typeKeys("\x03")
	c.expect(`you> never mind\^C\nyou> $`)
	c.typeKeys("hello\r")
	c.expect(`\[snail\] heard 5 characters\n  \(events #1-#2\)\nyou> $`)
	if got := userMessages(t, addr, "slow", "cc", "clear"); !slices.Equal(got, []string{"hello"}) {
		t.Fatalf("stored messages %q, want only \"hello\"", got)
	}
	c.typeKeys("\x04")
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("chat after Ctrl-D: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatalf("Ctrl-D on an empty line did not end the chat")
	}
}

// TestTerminalCtrlCStopsAnAnswer: Ctrl-C, and Esc, during an answer cancel
// the run on the server (RUN_STATUS_CANCELLED) and the chat answers the
// next line.
func TestTerminalCtrlCStopsAnAnswer(t *testing.T) {
	addr, _ := startServer(t)
	_, runs := clients(t, addr)
	c := startTermChat(t, "--addr", addr, "--app", "slow", "--user", "st", "--session", "stop")
	c.expect(`you> $`)
	for i, key := range []string{"\x03", "\x1b"} {
		c.typeKeys(takeYourTime + "\r")
		c.expect(fmt.Sprintf(`(?s)(\[snail\] thinking\.\.\..*){%d}$`, i+1))
		c.typeKeys(key)
		c.expect(fmt.Sprintf(`(?s)(\(run cancelled\).*){%d}\nyou> $`, i+1))
		list, err := runs.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "slow", UserId: "st", SessionId: "stop", PageSize: 1})
		if err != nil || len(list.GetRuns()) != 1 {
			t.Fatalf("ListRuns: %v %v", list, err)
		}
		got, err := runs.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: list.GetRuns()[0].GetRunId()})
		if err != nil {
			t.Fatal(err)
		}
		if st := got.GetRun().GetStatus(); st != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
			t.Fatalf("after key %q the run is %v, want RUN_STATUS_CANCELLED", key, st)
		}
		c.typeKeys("still there?\r")
		c.expect(fmt.Sprintf(`(?s)(\[snail\] heard 12 characters.*){%d}\nyou> $`, i+1))
	}
}

// TestTerminalRestoredOnSIGTERM: a chat ended by SIGTERM leaves the
// terminal as it found it (line mode, echo), not in raw mode.
func TestTerminalRestoredOnSIGTERM(t *testing.T) {
	addr, _ := startServer(t)
	c := startTermChat(t, "--addr", addr, "--app", "slow", "--user", "sig", "--session", "term")
	c.expect(`you> $`)
	if lflag := c.lflag(); lflag&unix.ICANON != 0 {
		t.Fatalf("the chat's terminal is in line mode (lflag %#x), want raw", lflag)
	}
	if err := unix.Kill(os.Getpid(), unix.SIGTERM); err != nil { // the chat is in this process; it catches the signal
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("chat after SIGTERM: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatalf("SIGTERM did not end the chat")
	}
	if lflag := c.lflag(); lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO {
		t.Fatalf("after the chat the terminal is left raw (lflag %#x)", lflag)
	}
}

// lflag reads the terminal's local mode flags.
func (c *termChat) lflag() uint32 {
	c.t.Helper()
	rc, err := c.probe.SyscallConn()
	if err != nil {
		c.t.Fatal(err)
	}
	var tio *unix.Termios
	if err := rc.Control(func(fd uintptr) { tio, err = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
		c.t.Fatal(err)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return tio.Lflag
}
