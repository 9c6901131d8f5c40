package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestLogRPCLevels(t *testing.T) {
	tests := []struct {
		err       error
		wantLevel string // "" means not logged at info
	}{
		{nil, ""},
		{status.Error(codes.NotFound, "x"), "INFO"},
		{status.Error(codes.InvalidArgument, "x"), "INFO"},
		{status.Error(codes.Internal, "x"), "ERROR"},
		{status.Error(codes.Unavailable, "x"), "ERROR"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
		logRPC(context.Background(), log, "/svc/M", time.Now(), tc.err)
		got := buf.String()
		if tc.wantLevel == "" {
			if got != "" {
				t.Errorf("%v logged at info level: %s", tc.err, got)
			}
			continue
		}
		if !strings.Contains(got, "level="+tc.wantLevel) || !strings.Contains(got, "method=/svc/M") {
			t.Errorf("%v logged %q, want level %s", tc.err, got, tc.wantLevel)
		}
	}
	// At debug level successful calls are logged too.
	var buf bytes.Buffer
	logRPC(context.Background(), slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), "/svc/M", time.Now(), nil)
	if !strings.Contains(buf.String(), "level=DEBUG") || !strings.Contains(buf.String(), "code=OK") {
		t.Errorf("debug log = %q", buf.String())
	}
}
