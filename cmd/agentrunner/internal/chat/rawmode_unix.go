//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package chat

import (
	"os"

	"golang.org/x/sys/unix"
)

// makeRaw puts the terminal f into raw mode and returns what undoes it; it
// fails when f is not a terminal. Unlike a full raw mode, output
// processing stays on, so the chat's "\n" still starts a new line.
//
// Raw mode because the terminal's own line editing (cooked mode) cuts a
// line at 4,095 bytes without a word, and turns Ctrl-C into a signal that
// ends the chat; here the chat reads every key itself (editor.go).
func makeRaw(f *os.File) (restore func() error, err error) {
	rc, err := f.SyscallConn() // not f.Fd(): that would make reads block a thread and Close not interrupt them
	if err != nil {
		return nil, err
	}
	var old *unix.Termios
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		old, ioErr = unix.IoctlGetTermios(int(fd), ioctlGetTermios)
		if ioErr != nil {
			return
		}
		raw := *old
		raw.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON | unix.ISTRIP | unix.BRKINT
		raw.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
		ioErr = unix.IoctlSetTermios(int(fd), ioctlSetTermios, &raw)
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return nil, err
	}
	return func() error {
		var setErr error
		err := rc.Control(func(fd uintptr) { setErr = unix.IoctlSetTermios(int(fd), ioctlSetTermios, old) })
		if err != nil {
			return err
		}
		return setErr
	}, nil
}
