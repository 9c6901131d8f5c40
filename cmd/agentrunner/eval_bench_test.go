package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// benchEvalSet is an eval set of n cases against the default apps' support
// app, a third each routed to billing, to tech and answered by triage.
func benchEvalSet(n int) []byte {
	type part struct {
		Text string `json:"text"`
	}
	type content struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	type call struct {
		Name string            `json:"name"`
		Args map[string]string `json:"args"`
	}
	cases := make([]map[string]any, n)
	for i := range n {
		msg, tools := fmt.Sprintf("question %d, hello", i), []call{}
		switch i % 3 {
		case 0:
			msg, tools = fmt.Sprintf("question %d: transfer me to billing", i), []call{{"transfer_to_agent", map[string]string{"agent_name": "billing"}}}
		case 1:
			msg, tools = fmt.Sprintf("question %d: transfer me to tech", i), []call{{"transfer_to_agent", map[string]string{"agent_name": "tech"}}}
		}
		cases[i] = map[string]any{
			"eval_id": fmt.Sprintf("case_%03d", i),
			"conversation": []map[string]any{{
				"user_content":      content{"user", []part{{msg}}},
				"final_response":    content{"model", []part{{"offline model: you said: " + msg}}},
				"intermediate_data": map[string]any{"tool_uses": tools},
			}},
		}
	}
	b, _ := json.Marshal(map[string]any{"eval_set_id": "bench", "eval_cases": cases})
	return b
}

// BenchmarkEval100x3 runs 100 cases x 3 repeats against the default apps
// on the offline model, through RunEval on a server in this process
// (bbolt store with fsync), and reports the wall time of one evaluation
// and the process's CPU (user + system) per case run. The client is this
// process too, but does nothing between the request and the answer.
func BenchmarkEval100x3(b *testing.B) {
	addr, _ := benchServer(b, "--data", filepath.Join(b.TempDir(), "db")) // default apps, offline model
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := servicev1.NewEvalServiceClient(conn)
	set := benchEvalSet(100)
	var cpu time.Duration
	start := time.Now()
	for b.Loop() {
		before := processCPU()
		resp, err := client.RunEval(b.Context(), &servicev1.RunEvalRequest{
			AppName: "support", UserId: "bench", EvalSet: set, Repeats: 3, Parallelism: 16,
		})
		cpu += processCPU() - before
		if err != nil {
			b.Fatal(err)
		}
		if !resp.GetEvalRun().GetPassed() {
			b.Fatalf("a case failed: %v", resp.GetEvalRun().GetCases()[0])
		}
	}
	b.ReportMetric(time.Since(start).Seconds()/float64(b.N), "s/eval")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*300), "cpu-us/case-run")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
