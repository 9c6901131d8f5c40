//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package chat

import (
	"errors"
	"os"
)

// makeRaw is not done here: the chat reads lines as from a pipe.
func makeRaw(*os.File) (func() error, error) {
	return nil, errors.New("raw terminal mode is not supported on this system")
}
