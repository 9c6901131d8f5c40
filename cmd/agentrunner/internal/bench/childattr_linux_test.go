package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithBench: a process started with childAttr is killed when
// the process that started it dies, as a bench killed by a signal (here
// SIGKILL, which it cannot handle) takes its servers with it.
func TestChildDiesWithBench(t *testing.T) {
	if os.Getenv("BENCH_CHILD_HELPER") == "1" {
		// The "bench": start a long child, say its pid, wait to be killed.
		c := exec.Command("sleep", "600")
		c.SysProcAttr = childAttr()
		if err := c.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
		select {}
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithBench$")
	helper.Env = append(os.Environ(), "BENCH_CHILD_HELPER=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(line[:len(line)-1])
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the child %d is not running: %v", pid, err)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	// The kernel kills the child once the helper is gone; it is then a
	// zombie of init's, or gone. Poll a process we do not control.
	for range 500 {
		if gone(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("the child %d outlived the process that started it", pid)
}

// gone reports whether pid no longer runs: no such process, or a zombie.
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) S ...": the state follows the last ')'.
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}
