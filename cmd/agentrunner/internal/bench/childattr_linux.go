package bench

import "syscall"

// childAttr makes a server the bench starts die with it: a bench stopped
// by a signal (Ctrl-C, a CI timeout) otherwise left its servers running,
// holding their ports and a core.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
