package chat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"unicode/utf8"
)

// Keys the line editor acts on.
const (
	ctrlC     = 0x03
	ctrlD     = 0x04
	backspace = 0x7f
	ctrlH     = 0x08
	esc       = 0x1b
)

// terminal reads a terminal in raw mode and edits lines on it: printable
// input, backspace, Enter, a trailing backslash to go on on the next line,
// and bracketed paste, so that a pasted text of any length and any number
// of lines is one message. It is small on purpose: no cursor movement, no
// history.
type terminal struct {
	want    chan<- struct{} // asks for the next read of the terminal
	asked   bool            // a read was asked for and has not arrived
	keys    <-chan []byte   // what each read of the terminal returned
	readErr *error          // why keys was closed
	closed  bool            // keys was closed
	pending []byte          // read and not yet handled
	out     io.Writer
	echo    []byte // what to show, written before waiting for keys
}

// newTerminal starts the one goroutine that reads r: the line editor and
// the watch during an answer take turns at its keys, since a read blocked
// on a terminal cannot be called off. It reads only when asked: after
// /quit nothing may take the keys the person types next to the shell.
func newTerminal(r io.Reader, out io.Writer) *terminal {
	want, keys := make(chan struct{}, 1), make(chan []byte)
	var readErr error
	go func() {
		buf := make([]byte, 64<<10)
		for range want {
			n, err := r.Read(buf)
			for n == 0 && err == nil {
				n, err = r.Read(buf)
			}
			if n > 0 {
				keys <- bytes.Clone(buf[:n])
			}
			if err != nil {
				readErr = err
				close(keys)
				return
			}
		}
	}()
	return &terminal{want: want, keys: keys, readErr: &readErr, out: out}
}

// ask asks for the next read, once.
func (t *terminal) ask() {
	if !t.asked {
		t.want <- struct{}{}
		t.asked = true
	}
}

// received notes what came from keys; false when the keys have ended.
func (t *terminal) received(b []byte, ok bool) bool {
	t.asked = false
	t.closed = !ok
	return ok
}

// show writes what was typed since it last did: once per read of the
// terminal rather than once per key, which matters for a long paste.
func (t *terminal) show() {
	if len(t.echo) > 0 {
		_, _ = t.out.Write(t.echo)
		t.echo = t.echo[:0]
	}
}

// fill waits for the next keys, after showing what was typed so far.
func (t *terminal) fill(ctx context.Context) error {
	t.show()
	if t.closed {
		return t.err()
	}
	t.ask()
	select {
	case b, ok := <-t.keys:
		if !t.received(b, ok) {
			return t.err()
		}
		t.pending = append(t.pending, b...)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// err is why the keys ended; the end of a terminal is the end of input.
func (t *terminal) err() error {
	if err := *t.readErr; err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return io.EOF
}

func (t *terminal) next(ctx context.Context) (byte, error) {
	for len(t.pending) == 0 {
		if err := t.fill(ctx); err != nil {
			return 0, err
		}
	}
	b := t.pending[0]
	t.pending = t.pending[1:]
	return b, nil
}

// lineState is one line being edited.
type lineState struct {
	buf   []byte
	paste bool // between the terminal's paste start and end marks
	cr    bool // the last pasted byte was a carriage return
}

func (t *terminal) readLine(ctx context.Context) (string, error) {
	defer t.show()
	var l lineState
	for {
		b, err := t.next(ctx)
		if err != nil {
			return "", err
		}
		switch {
		case b == ctrlC: // even in a paste: a lost end mark must not trap the person
			t.echo = append(t.echo, "^C\n"...)
			return "", errInterrupt
		case b == esc:
			if err := t.escape(ctx, &l); err != nil {
				return "", err
			}
		case l.paste:
			t.pasted(&l, b)
		case b == '\r' || b == '\n':
			if done := t.enter(&l); done {
				return lineText(l.buf), nil
			}
		case b == ctrlD && len(l.buf) == 0:
			return "", io.EOF
		case b == backspace || b == ctrlH:
			t.erase(&l)
		case b >= 0x20 || b == '\t':
			l.buf = append(l.buf, b)
			t.echo = append(t.echo, b)
		}
		l.cr = b == '\r'
	}
}

// lineText makes the edited bytes a message; protobuf strings must be
// valid UTF-8, and a terminal may send anything.
func lineText(b []byte) string { return string(bytes.ToValidUTF8(b, []byte("\uFFFD"))) }

// enter ends the line, unless it ends with a backslash: then the
// backslash becomes a newline and the message goes on.
func (t *terminal) enter(l *lineState) (done bool) {
	t.echo = append(t.echo, '\n')
	if n := len(l.buf); n > 0 && l.buf[n-1] == '\\' {
		l.buf[n-1] = '\n'
		t.echo = append(t.echo, "... "...)
		return false
	}
	return true
}

// pasted adds a byte of a paste: its line ends (CR, LF or CRLF) are
// newlines of the message, not Enters.
func (t *terminal) pasted(l *lineState, b byte) {
	switch {
	case b == '\n' && l.cr:
		return // the LF of a CRLF
	case b == '\r' || b == '\n':
		l.buf = append(l.buf, '\n')
		t.echo = append(t.echo, '\n')
	case b >= 0x20 || b == '\t':
		l.buf = append(l.buf, b)
		t.echo = append(t.echo, b)
	}
}

// erase removes the last character; it does not go back past a newline,
// which the screen cannot take back.
func (t *terminal) erase(l *lineState) {
	r, n := utf8.DecodeLastRune(l.buf)
	if n == 0 || r == '\n' {
		return
	}
	l.buf = l.buf[:len(l.buf)-n]
	t.echo = append(t.echo, "\b \b"...)
}

// escape reads what follows an ESC: the paste marks ESC[200~ and
// ESC[201~ switch paste on and off, other sequences (arrow keys, function
// keys) are ignored, and so is Esc pressed alone, which arrives alone in
// its read.
func (t *terminal) escape(ctx context.Context, l *lineState) error {
	if len(t.pending) == 0 && !l.paste {
		return nil // Esc alone
	}
	b, err := t.next(ctx)
	if err != nil || (b != '[' && b != 'O') {
		return err // Alt with a key: ignored
	}
	var seq []byte
	for len(seq) < 16 { // a bound, so that a broken sequence cannot swallow a paste
		c, err := t.next(ctx)
		if err != nil {
			return err
		}
		seq = append(seq, c)
		if b == 'O' || (c >= 0x40 && c <= 0x7e) {
			break
		}
	}
	switch string(seq) {
	case "200~":
		l.paste = true
	case "201~":
		l.paste = false
	}
	return nil
}

// watch takes the keys while an answer streams: Ctrl-C, or Esc pressed
// alone, calls interrupt; anything else is typed ahead for the next line.
func (t *terminal) watch(interrupt func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for !t.closed {
			t.ask()
			select {
			case b, ok := <-t.keys:
				switch {
				case !t.received(b, ok):
				case bytes.IndexByte(b, ctrlC) >= 0 || (len(b) == 1 && b[0] == esc):
					interrupt()
				default:
					t.pending = append(t.pending, b...)
				}
			case <-quit:
				return
			}
		}
	}()
	// Once stop returns, the editor has the keys (and t) to itself again.
	return func() {
		close(quit)
		<-done
	}
}
