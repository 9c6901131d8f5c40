// Package admin serves agentrunner.service.v1.AdminService, the operator's
// RPCs. It knows nothing of the rest of the server: it is given what it
// needs as small interfaces (a store that can copy itself, Backuper), so
// that it can be registered on any grpc.Server beside the other services.
// Who may call it is the server's business (its authorization table: admins
// only); the package checks nothing of the caller.
package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Backuper is a store that can write a consistent copy of itself while it
// serves (store/boltstore's Store). It returns the copy's size.
type Backuper interface {
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// ChunkBytes is the most a BackupResponse carries: well under the 4 MiB a
// gRPC client accepts by default.
const ChunkBytes = 1 << 20

// Reloader reads the server's apps again and applies them (the apps
// file that cmd/agentrunner serves). Its error, when it carries a gRPC
// status (INVALID_ARGUMENT for a file with errors, FAILED_PRECONDITION
// for a server with no file), is the answer as it is; any other is
// INTERNAL.
type Reloader interface {
	ReloadApps(ctx context.Context) (*servicev1.ReloadAppsResponse, error)
}

// DeliveryLister is a store that keeps a webhook outbox (both stores,
// store.WebhookOutbox's listing).
type DeliveryLister interface {
	ListDeliveries(ctx context.Context, st agentrunnerv1.WebhookDeliveryState, n int) ([]*agentrunnerv1.WebhookDelivery, error)
}

// maxDeliveries bounds one ListWebhookDeliveries (store.MaxClaim).
const maxDeliveries = 100

// Service implements AdminService.
type Service struct {
	servicev1.UnimplementedAdminServiceServer
	backup     Backuper
	reload     Reloader
	deliveries DeliveryLister
	log        *slog.Logger
}

// New returns the service for a store. st is typically the server's
// store.Store: when it is a Backuper, Backup copies it; otherwise (on
// PostgreSQL) Backup answers FAILED_PRECONDITION. A nil log means
// slog.Default().
func New(st any, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	b, _ := st.(Backuper)
	d, _ := st.(DeliveryLister)
	return &Service{backup: b, deliveries: d, log: log}
}

// ListWebhookDeliveries lists the outbox's deliveries in a state.
func (s *Service) ListWebhookDeliveries(ctx context.Context, req *servicev1.ListWebhookDeliveriesRequest) (*servicev1.ListWebhookDeliveriesResponse, error) {
	if s.deliveries == nil {
		return nil, status.Error(codes.FailedPrecondition, "this store keeps no webhook outbox")
	}
	st := req.GetState()
	switch st {
	case agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_UNSPECIFIED:
		st = agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED
	case agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING:
	default:
		return nil, status.Errorf(codes.InvalidArgument, "state: %d is no delivery state", st)
	}
	n := int(req.GetPageSize())
	if n < 0 {
		return nil, status.Error(codes.InvalidArgument, "page_size: must not be negative")
	}
	if n == 0 || n > maxDeliveries {
		n = maxDeliveries
	}
	ds, err := s.deliveries.ListDeliveries(ctx, st, n)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		s.log.Error("list webhook deliveries", "err", err)
		return nil, status.Errorf(codes.Internal, "list webhook deliveries: %v", err)
	}
	return &servicev1.ListWebhookDeliveriesResponse{Deliveries: ds}, nil
}

// WithReloader makes ReloadApps call r; without one it answers
// UNIMPLEMENTED. It returns s, for chaining before Register.
func (s *Service) WithReloader(r Reloader) *Service {
	s.reload = r
	return s
}

// ReloadApps reads the apps again through the Reloader.
func (s *Service) ReloadApps(ctx context.Context, _ *servicev1.ReloadAppsRequest) (*servicev1.ReloadAppsResponse, error) {
	if s.reload == nil {
		return nil, status.Error(codes.Unimplemented, "this server has no apps to reload")
	}
	resp, err := s.reload.ReloadApps(ctx)
	if err == nil {
		return resp, nil
	}
	var se interface{ GRPCStatus() *status.Status }
	switch {
	case errors.As(err, &se):
		return nil, se.GRPCStatus().Err()
	case ctx.Err() != nil:
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	s.log.Error("reload apps failed", "err", err)
	return nil, status.Errorf(codes.Internal, "reload apps: %v", err)
}

// Register registers s on gs. Call it before gs serves.
func (s *Service) Register(gs *grpc.Server) {
	servicev1.RegisterAdminServiceServer(gs, s)
}

// Backup streams the store's copy in chunks of ChunkBytes, then a last
// message with its size and SHA-256. gRPC's flow control paces the copy
// to the client: a slow client keeps the store's read transaction open
// longer, never buffers the file in memory.
func (s *Service) Backup(_ *servicev1.BackupRequest, stream grpc.ServerStreamingServer[servicev1.BackupResponse]) error {
	if s.backup == nil {
		return status.Error(codes.FailedPrecondition,
			"this store has no online backup: on PostgreSQL, back up the database with pg_dump (docs/operations.md names the tables)")
	}
	ctx := stream.Context()
	cw := &chunkWriter{stream: stream, sum: sha256.New(), buf: make([]byte, 0, ChunkBytes)}
	n, err := s.backup.Backup(ctx, cw)
	if err == nil {
		err = cw.flush()
	}
	if err != nil {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		var se interface{ GRPCStatus() *status.Status }
		if errors.As(err, &se) {
			return err
		}
		s.log.Error("backup failed", "err", err)
		return status.Errorf(codes.Internal, "backup: %v", err)
	}
	if n != cw.n {
		return status.Errorf(codes.Internal, "backup: the store wrote %d bytes, %d were sent", n, cw.n)
	}
	sum := hex.EncodeToString(cw.sum.Sum(nil))
	s.log.Info("backup sent", "bytes", n, "sha256", sum)
	return stream.Send(&servicev1.BackupResponse{Size: n, Sha256: sum})
}

// chunkWriter cuts what the store writes into messages of ChunkBytes,
// hashing it as it goes.
type chunkWriter struct {
	stream grpc.ServerStreamingServer[servicev1.BackupResponse]
	sum    hash.Hash
	buf    []byte
	n      int64
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		k := min(len(p), ChunkBytes-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p, written = p[k:], written+k
		if len(c.buf) == ChunkBytes {
			if err := c.flush(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// flush sends what is buffered, then starts a new buffer: grpc-go says a
// message must not change after SendMsg (a stats handler may read it
// later), so a sent chunk is never reused.
func (c *chunkWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	c.sum.Write(c.buf)
	c.n += int64(len(c.buf))
	err := c.stream.Send(&servicev1.BackupResponse{Chunk: c.buf})
	c.buf = make([]byte, 0, ChunkBytes)
	return err
}
