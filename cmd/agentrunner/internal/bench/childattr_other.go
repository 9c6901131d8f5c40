//go:build !linux

package bench

import "syscall"

// childAttr is nil where there is no parent-death signal: a bench stopped
// by a signal may leave its servers running there.
func childAttr() *syscall.SysProcAttr { return nil }
