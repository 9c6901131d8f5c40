package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// benchConfig is the apps file of a server the bench starts: one LLM agent
// on the offline model, which answers at once, so that what is measured is
// the service and not a model.
const benchConfig = `apps:
  - name: %s
    description: Load benchmark app (offline model, zero latency).
    root_agent:
      name: answer
      description: Answers with the deterministic offline model.
      llm: { model: offline }
`

// pricedConfig is benchConfig on a priced offline model, with budgets of
// every kind far above what a bench spends: every call is priced, counted
// in the day's spend and checked against the budgets, and none stops.
const pricedConfig = `models:
  - name: priced
    provider: offline
    price: {currency: USD, input: 1.25, output: 10, cached_input: 0.125}
apps:
  - name: %s
    description: Load benchmark app (priced offline model, zero latency, budgets).
    budgets:
      run: {tokens: 1000000000, cost: 100000}
      session: {tokens: 2000000000, cost: 1000000}
      user_daily: {tokens: 1000000000000, cost: 1000000}
      app_daily: {tokens: 1000000000000, cost: 10000000}
    root_agent:
      name: answer
      description: Answers with the deterministic offline model.
      llm: { model: priced }
`

// serverProc is an agentrunner server the bench started as a child
// process, so that its CPU time and memory can be read from /proc.
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	data string
	logs *logBuffer
	// debug is the base URL serving /debug/pprof, when the bench asked
	// for one (the runs-in-flight scenario counts goroutines there).
	debug string
}

// logBuffer keeps the tail of a child's output: the bench only ever
// shows a tail, and a server's log over a long bench has no bound. exec's
// copying goroutine writes it while the bench may read it (a log tail in
// an error): hence the lock.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// logKeep is the least of a child's output a logBuffer keeps; it holds at
// most twice as much.
const logKeep = 1 << 20

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 2*logKeep {
		tail := bytes.Clone(b.buf.Bytes()[b.buf.Len()-logKeep:])
		b.buf.Reset()
		b.buf.Write(tail)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startServer runs `binary serve` on a free loopback port with a data file
// in dir (or on the database at data, a URL, when not empty), named
// replica when that is not empty, serving the priced app when priced,
// and waits until its health check answers SERVING.
func startServer(ctx context.Context, binary, dir, app, data, replica string, priced bool) (*serverProc, error) {
	config := benchConfig
	if priced {
		config = pricedConfig
	}
	var extra []string
	if replica != "" {
		extra = append(extra, "--replica", replica)
	}
	return startServerWith(ctx, binary, dir, fmt.Sprintf(config, app), data, extra)
}

// startServerWith runs `binary serve` as startServer does, on the apps
// file config, with extra flags.
func startServerWith(ctx context.Context, binary, dir, config, data string, extra []string) (*serverProc, error) {
	cfg := filepath.Join(dir, "apps.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &serverProc{addr: addr, data: filepath.Join(dir, "agentrunner.db"), logs: &logBuffer{}}
	if data != "" {
		p.data = data
	}
	args := append([]string{"serve", "--addr", addr, "--data", p.data, "--config", cfg}, extra...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.SysProcAttr = childAttr()
	// Keep the environment but never a model key: the bench app must not
	// reach a real model.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOOGLE_API_KEY" && k != "GEMINI_API_KEY" && k != "GOOGLE_GENAI_USE_VERTEXAI" && k != "AGENTRUNNER_HTTP_ADDR" {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	// The console's listener stays on, as it is by default, so that the
	// bench measures the gRPC port of the server people run; but on a
	// free port: its default, 8080, would collide between replicas and
	// with whatever else uses it. Set through the environment, which a
	// --baseline binary from before the listener ignores.
	p.cmd.Env = append(p.cmd.Env, "AGENTRUNNER_HTTP_ADDR=127.0.0.1:0")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		p.kill()
		return nil, err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("server exited before serving (%v):\n%s", err, p.logs)
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			go func() { <-exited }() // reap when it ends
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.kill()
			return nil, fmt.Errorf("server at %s not serving after 30s: %v\n%s", addr, err, p.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling a process we do not control
	}
}

func (p *serverProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// stop asks the server to shut down gracefully and waits for it to exit.
func (p *serverProc) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	for range 500 {
		if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return nil // gone
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	return fmt.Errorf("server did not stop within 10s")
}

// servers are the replicas of one scenario group, all on one store.
type servers []*serverProc

func (s servers) addrs() []string {
	var out []string
	for _, p := range s {
		out = append(out, p.addr)
	}
	return out
}

func (s servers) kill() {
	for _, p := range s {
		p.kill()
	}
}

// stop stops every replica gracefully, all at once.
func (s servers) stop() error {
	errs := make([]error, len(s))
	var wg sync.WaitGroup
	for i, p := range s {
		wg.Go(func() { errs[i] = p.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// cpuSeconds is the CPU time the replicas have used, summed.
func (s servers) cpuSeconds() (float64, error) {
	var sum float64
	for _, p := range s {
		c, err := cpuSeconds(p.cmd.Process.Pid)
		if err != nil {
			return 0, err
		}
		sum += c
	}
	return sum, nil
}

// peakRSSKiB is the largest peak RSS of the replicas.
func (s servers) peakRSSKiB() (int64, error) {
	var peak int64
	for _, p := range s {
		hwm, err := memKiB(p.cmd.Process.Pid, "VmHWM")
		if err != nil {
			return 0, err
		}
		peak = max(peak, hwm)
	}
	return peak, nil
}

// logTail returns the end of each replica's log, n bytes at most each.
func (s servers) logTail(n int) string {
	var b strings.Builder
	for i, p := range s {
		if len(s) > 1 {
			fmt.Fprintf(&b, "replica %d:\n", i)
		}
		b.WriteString(tail(p.logs.String(), n))
	}
	return b.String()
}

// cpuSeconds returns the user+system CPU time the process has used.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may
	// contain spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat")
	}
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100, nil // USER_HZ is 100 on Linux
}

// memKiB returns a field of /proc/pid/status in KiB (VmRSS, VmHWM).
func memKiB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// FileStats describes a stopped server's data file.
type FileStats struct {
	FileBytes int64 `json:"file_bytes"`
	Events    int   `json:"events"`
	// EventBytesPerEvent is the B-tree space of the events bucket (leaf,
	// branch and overflow pages in use) per stored event.
	EventBytesPerEvent float64 `json:"event_bytes_per_event"`
	// FileBytesPerEvent is the whole file per stored event.
	FileBytesPerEvent float64 `json:"file_bytes_per_event"`
}

func inspectFile(path string) (FileStats, error) {
	st, err := os.Stat(path)
	if err != nil {
		return FileStats{}, err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return FileStats{}, err
	}
	defer db.Close()
	fs := FileStats{FileBytes: st.Size()}
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		if b == nil {
			return fmt.Errorf("no events bucket in %s", path)
		}
		s := b.Stats()
		fs.Events = s.KeyN
		if s.KeyN > 0 {
			fs.EventBytesPerEvent = float64(s.LeafInuse+s.BranchInuse) / float64(s.KeyN)
			fs.FileBytesPerEvent = float64(st.Size()) / float64(s.KeyN)
		}
		return nil
	})
	return fs, err
}
