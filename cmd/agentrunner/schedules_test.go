package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// schedulesCLI runs `agentrunner schedules ARGS... --addr addr` and
// returns its stdout, stderr and exit status.
func schedulesCLI(t *testing.T, addr string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut strings.Builder
	err := run(t.Context(), append(append([]string{"schedules"}, args...), "--addr", addr), strings.NewReader(""), &out, &errOut)
	code := exitCode(err, &errOut) // it prints the error, as main does
	return out.String(), errOut.String(), code
}

// TestSchedulesCLI: the apps file's schedule is listed with its next
// time; one created from the CLI is listed, shown and deleted; bad flags
// and a bad cron are refused with the reason.
func TestSchedulesCLI(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", envAuthFile} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "apps.yaml")
	apps := strings.Replace(tickApps, `cron: "* * * * * *"`, `cron: "0 8 * * mon-fri"`+"\n        time_zone: Europe/Paris", 1)
	if err := os.WriteFile(config, []byte(apps), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, exited, logs := startRun(t, ctx, "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data.db"), "--config", config)
	defer func() {
		cancel()
		if err := <-exited; err != nil {
			t.Errorf("serve: %v\n%s", err, logs)
		}
	}()
	out, errOut, code := schedulesCLI(t, addr, "create", "--app", "tick", "--user", "ops", "--cron", "@every 1h", "--message", "hourly", "--missed", "run_once")
	if code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	id := regexp.MustCompile(`sch-[a-z0-9]+`).FindString(out)
	if id == "" || !strings.Contains(out, "run_once") {
		t.Fatalf("create printed:\n%s", out)
	}
	out, errOut, code = schedulesCLI(t, addr, "list", "--app", "tick")
	if code != 0 || !strings.Contains(out, "tick/every-second") || !strings.Contains(out, "Europe/Paris") || !strings.Contains(out, id) {
		t.Fatalf("list: %d\n%s%s", code, out, errOut)
	}
	if out, _, code = schedulesCLI(t, addr, "get", "tick/every-second", "--json"); code != 0 || !strings.Contains(out, `"nextFireTime"`) || !strings.Contains(out, `"SCHEDULE_SOURCE_APPS_FILE"`) {
		t.Fatalf("get --json: %d\n%s", code, out)
	}
	if out, _, code = schedulesCLI(t, addr, "pause", id); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %s", code, out)
	}
	if out, _, code = schedulesCLI(t, addr, "resume", id); code != 0 || strings.Contains(out, "paused") {
		t.Fatalf("resume: %d %s", code, out)
	}
	if out, _, code = schedulesCLI(t, addr, "delete", id); code != 0 || !strings.Contains(out, "deleted") {
		t.Fatalf("delete: %d %s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", "tick/every-second"}, "apps file"},
		{[]string{"create", "--app", "tick", "--user", "ops", "--cron", "* * *", "--message", "m"}, "schedule.cron"},
		{[]string{"create", "--app", "tick", "--cron", "@daily"}, "--user, --cron and --message are required"},
		{[]string{"list"}, "--app is required"},
		{[]string{"get"}, "one schedule id"},
		{[]string{"frobnicate"}, "want list, get, create, delete, pause or resume"},
	} {
		_, errOut, code := schedulesCLI(t, addr, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("schedules %q: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
