package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// input is where the person's lines come from: a terminal the chat edits
// lines on itself (terminal), or anything else read line by line (lines).
type input interface {
	// readLine returns the next message or answer, which may span lines.
	// It returns errInterrupt when the person pressed Ctrl-C (the line
	// is dropped) and io.EOF at the end of input (Ctrl-D on an empty
	// line).
	readLine(ctx context.Context) (string, error)
	// watch calls interrupt whenever the person presses Ctrl-C or Esc,
	// until stop is called; other keys are kept for the next readLine.
	// Used while an answer streams.
	watch(interrupt func()) (stop func())
}

// errInterrupt is Ctrl-C at a prompt: the line typed so far is dropped.
var errInterrupt = errors.New("interrupted")

// openInput returns the input for stdin and what to call when the chat
// ends: raw mode with the chat's own line editor when stdin is a
// terminal, lines of any length otherwise.
func openInput(stdin io.Reader, stdout io.Writer) (input, func()) {
	if f, ok := stdin.(*os.File); ok {
		if restore, err := makeRaw(f); err == nil {
			// Bracketed paste: the terminal marks a paste, so that its
			// newlines are part of one message rather than Enters.
			fmt.Fprint(stdout, pasteOn)
			return newTerminal(f, stdout), func() {
				fmt.Fprint(stdout, pasteOff)
				_ = restore()
			}
		}
	}
	return lines{bufio.NewReaderSize(stdin, 64<<10)}, func() {}
}

const (
	pasteOn  = "\x1b[?2004h"
	pasteOff = "\x1b[?2004l"
)

// lines reads input that is not a terminal (a pipe, a file, a test):
// lines of any length, a trailing backslash continuing one on the next.
type lines struct{ r *bufio.Reader }

func (l lines) readLine(context.Context) (string, error) {
	var msg strings.Builder
	for {
		s, err := l.r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
		if err == nil && strings.HasSuffix(s, `\`) {
			msg.WriteString(s[:len(s)-1] + "\n")
			continue
		}
		msg.WriteString(s)
		if err != nil && msg.Len() == 0 {
			return "", io.EOF
		}
		// Text before the end of input is a line; EOF comes next time.
		return strings.ToValidUTF8(msg.String(), "\uFFFD"), nil
	}
}

// watch does nothing: without a terminal there are no keys to watch, and
// Ctrl-C is the terminal's signal.
func (lines) watch(func()) func() { return func() {} }
