package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrFenced: a write under a session lease that another writer has taken
// over since (its fencing token is no longer the session's). The writer
// must stop: another replica now owns the session.
var ErrFenced = errors.New("session lease lost")

// Lease is one writer's claim on a session, for stores that several
// processes share. Token is the fencing token: it grows with every
// acquisition of the session's lease, so a write carrying an older one
// comes from a writer whose lease was taken.
type Lease struct {
	Key     SessionKey
	Holder  string
	Token   uint64
	Expires time.Time
	// Replaced, set by AcquireLease, is the holder of the expired lease
	// this one took over (empty when the session was free, released or
	// already holder's): that holder stopped renewing, so it may have
	// died in a run it never ended.
	Replaced string
}

// SessionLeaser is implemented by stores that hand out session leases
// (store/pgstore). Appends (AppendEvent, AppendEventOnce, AppendRunEvent)
// whose context carries a lease of the session (WithLease) are refused
// with ErrFenced once the session's lease has another token; appends
// without one are not checked.
type SessionLeaser interface {
	// AcquireLease takes session k's lease for holder, for ttl, with a new
	// token, when it is free, expired or holder's already. Another
	// holder's live lease is ErrAlreadyExists naming it; a missing session
	// is ErrNotFound.
	AcquireLease(ctx context.Context, k SessionKey, holder string, ttl time.Duration) (Lease, error)
	// RenewLease extends a lease still held (the heartbeat); ErrFenced
	// when it was taken over.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease gives a lease up; ErrFenced when it was taken over.
	ReleaseLease(ctx context.Context, l Lease) error
}

// LeaseHeld is the error of AcquireLease for a session that another
// holder's live lease covers. It wraps ErrAlreadyExists and names the
// holder, so that a caller can tell a brief claim from a writer.
type LeaseHeld struct {
	Key     SessionKey
	Holder  string
	Expires time.Time
	// Left is how long the lease had to run when it was refused, by the
	// store's clock: a caller whose clock differs from the store's
	// counts from its own now, not from Expires.
	Left time.Duration
}

func (e *LeaseHeld) Error() string {
	return fmt.Sprintf("session %s is leased to %s until %s: %v", e.Key, e.Holder, e.Expires.UTC().Format(time.RFC3339Nano), ErrAlreadyExists)
}

// Unwrap makes errors.Is(err, ErrAlreadyExists) hold.
func (e *LeaseHeld) Unwrap() error { return ErrAlreadyExists }

type leaseKey struct{}

// WithLease returns ctx carrying l: the store's appends to l's session
// under ctx check its fencing token.
func WithLease(ctx context.Context, l Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseFrom returns the lease ctx carries for session k, if any.
func LeaseFrom(ctx context.Context, k SessionKey) (Lease, bool) {
	l, ok := ctx.Value(leaseKey{}).(Lease)
	if !ok || l.Key != k {
		return Lease{}, false
	}
	return l, true
}
