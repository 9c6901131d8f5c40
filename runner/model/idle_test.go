package model

import (
	"net/http"
	"testing"
	"time"
)

// TestIdleClient: the bound goes on a copy, never on the caller's client.
func TestIdleClient(t *testing.T) {
	own := &http.Client{Timeout: time.Minute}
	if got := IdleClient(own, 0); got != own {
		t.Errorf("IdleClient(own, 0) = %p, want the client itself %p", got, own)
	}
	got := IdleClient(own, time.Second)
	if got == own || own.Transport != nil {
		t.Fatalf("IdleClient changed the caller's client (transport %v)", own.Transport)
	}
	if _, ok := got.Transport.(idleTransport); !ok || got.Timeout != time.Minute {
		t.Errorf("IdleClient(own, 1s) = transport %T timeout %v, want the idle bound over a copy", got.Transport, got.Timeout)
	}
	if IdleClient(nil, 0) == nil {
		t.Error("IdleClient(nil, 0) = nil, want a new client")
	}
}
