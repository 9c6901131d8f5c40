package chat

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// chunks is a terminal whose reads return the given chunks, one each, as
// a terminal returns what arrived together (a key, a sequence, a paste).
type chunks struct{ c []string }

func (r *chunks) Read(p []byte) (int, error) {
	if len(r.c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.c[0])
	if r.c[0] = r.c[0][n:]; r.c[0] == "" {
		r.c = r.c[1:]
	}
	return n, nil
}

// readAll edits lines until the end of input and returns them, errors
// named in brackets.
func readAll(t *testing.T, in ...string) ([]string, string) {
	t.Helper()
	var screen bytes.Buffer
	term := newTerminal(&chunks{in}, &screen)
	var got []string
	for {
		line, err := term.readLine(t.Context())
		switch {
		case errors.Is(err, io.EOF):
			return got, screen.String()
		case errors.Is(err, errInterrupt):
			got = append(got, "[interrupt]")
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, line)
		}
	}
}

func TestEditor(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"lines", []string{"hello\r", "a\nb\r"}, []string{"hello", "a", "b"}},
		{"backspace", []string{"hel", "lp\x7f\x7flo\r", "é\x7fe\x08x\r"}, []string{"hello", "x"}},
		{"backspace stops at a newline", []string{"a\\\r\x7f\x7fb\r"}, []string{"a\nb"}},
		{"ctrl-c drops the line", []string{"never mind", "\x03", "hi\r"}, []string{"[interrupt]", "hi"}},
		{"ctrl-d on an empty line ends", []string{"ab\x04c\r", "\x04", "after\r"}, []string{"abc"}},
		{"trailing backslash goes on", []string{"one \\\r", "two\\\r", "three\r"}, []string{"one \ntwo\nthree"}},
		{"paste is one message", []string{"\x1b[200~a\rb\r\nc\n\rd\x1b[201~", "\r"}, []string{"a\nb\nc\n\nd"}},
		{"paste split across reads", []string{"\x1b[200~a\r", "b\x1b", "[20", "1~!\r"}, []string{"a\nb!"}},
		{"keys and Esc alone ignored", []string{"a\x1b[A\x1b[1;5C\x1bOP", "\x1b", "\x1bxb\x01\r"}, []string{"ab"}},
		{"not UTF-8", []string{"\xffok\r"}, []string{"\uFFFDok"}},
		{"long", []string{strings.Repeat("z", 70000) + "\r"}, []string{strings.Repeat("z", 70000)}},
		{"ctrl-c in a paste", []string{"\x1b[200~stuck\x03", "x\r"}, []string{"[interrupt]", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, screen := readAll(t, tc.in...)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines %q, want %q\nscreen %q", got, tc.want, screen)
			}
		})
	}
}

// TestEditorScreen: what the person sees of what they type.
func TestEditorScreen(t *testing.T) {
	_, screen := readAll(t, "helo\x7f\x7flo\r", "a\\\rb\r", "x\x03")
	if want := "helo\b \b\b \blo\na\\\n... b\nx^C\n"; screen != want {
		t.Errorf("screen %q, want %q", screen, want)
	}
}

// TestWatch: while an answer streams, Ctrl-C and Esc alone interrupt, and
// other keys wait for the next line.
func TestWatch(t *testing.T) {
	r, w := io.Pipe()
	term := newTerminal(r, io.Discard)
	interrupts := make(chan struct{}, 10)
	stop := term.watch(func() { interrupts <- struct{}{} })
	// Each write returns once the watch has taken the one before.
	for _, k := range []string{"typed ", "\x03", "\x1b", "\x1b[A", "ahead\r"} {
		if _, err := io.WriteString(w, k); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if n := len(interrupts); n != 2 {
		t.Errorf("%d interrupts, want 2 (Ctrl-C and Esc)", n)
	}
	line, err := term.readLine(t.Context())
	if err != nil || line != "typed ahead" {
		t.Errorf("the line after the answer: %q, %v; want the keys typed ahead", line, err)
	}
}

// TestReadsOnlyWhenAsked: after a line the editor reads no further, so
// that what is typed after /quit reaches the shell, not the ended chat.
func TestReadsOnlyWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &countingReader{chunks: chunks{[]string{"/quit\r", "echo shell\r"}}}
		term := newTerminal(r, io.Discard)
		line, err := term.readLine(t.Context())
		if err != nil || line != "/quit" {
			t.Fatalf("readLine: %q, %v", line, err)
		}
		synctest.Wait() // the reading goroutine does what it would do next
		if n := r.reads.Load(); n != 1 {
			t.Errorf("%d reads of the terminal, want 1: the chat took keys it did not need", n)
		}
		for err == nil { // to the end of input, which ends the reading goroutine
			_, err = term.readLine(t.Context())
		}
	})
}

type countingReader struct {
	chunks
	reads atomic.Int32
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads.Add(1)
	return r.chunks.Read(p)
}
