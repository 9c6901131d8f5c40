package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// The limits: what this machine allows for the two things a run costs
// besides CPU, measured with the same write pattern and message sizes.

// FsyncLimit is the measured durable-write rate of a directory's disk.
type FsyncLimit struct {
	// BytesPerSync is what each commit wrote besides its meta page.
	BytesPerSync int `json:"bytes_per_sync"`
	// SyncsPerSec is the number of durable commits per second from one
	// writer, each written as a crash-safe B-tree commit must be: the
	// pages, fdatasync, then the meta page that makes them live, fdatasync.
	// This is the pattern of a bbolt commit, and the least any store that
	// updates pages in place can do.
	SyncsPerSec float64 `json:"syncs_per_sec"`
	// RawSyncsPerSec counts the fdatasync calls alone (two per commit).
	RawSyncsPerSec float64 `json:"raw_fdatasyncs_per_sec"`
}

// measureFsync makes commits of bytesPerSync bytes (whole pages, at
// scattered offsets, as a B-tree commit writes them), for d, in a scratch
// file in dir.
func measureFsync(ctx context.Context, dir string, bytesPerSync int, d time.Duration) (FsyncLimit, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-*")
	if err != nil {
		return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const fileSize = 64 << 20
	// Allocate the blocks, as a bbolt file's are, so that the probe
	// measures writes and syncs, not block allocation.
	if err := unix.Fallocate(int(f.Fd()), 0, 0, fileSize); err != nil {
		return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
	}
	const page = 4096
	pages := max(1, (bytesPerSync+page-1)/page)
	buf := make([]byte, page)
	for i := range buf {
		buf[i] = byte(i)
	}
	var off int64
	n := 0
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		for range pages {
			// Stride through the file so pages are not adjacent.
			off = (off + 37*page) % (fileSize - page)
			if _, err := f.WriteAt(buf, off); err != nil {
				return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
			}
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
		}
		// The meta page, at the start of the file, like bbolt's.
		if _, err := f.WriteAt(buf, int64(n%2)*page); err != nil {
			return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return FsyncLimit{}, fmt.Errorf("fsync probe: %w", err)
		}
		n++
	}
	rate := float64(n) / time.Since(start).Seconds()
	return FsyncLimit{BytesPerSync: pages * page, SyncsPerSec: rate, RawSyncsPerSec: 2 * rate}, ctx.Err()
}

// StreamLimit is the measured loopback gRPC server-streaming rate.
type StreamLimit struct {
	// MessageBytes is the encoded size of each message.
	MessageBytes int `json:"message_bytes"`
	// Streams is the number of concurrent streams.
	Streams int `json:"streams"`
	// MsgsPerSec is the total receive rate.
	MsgsPerSec float64 `json:"msgs_per_sec"`
}

// loopbackService is a one-method service registered by hand: it streams
// a fixed message, so the measurement has nothing but gRPC in it.
var loopbackDesc = grpc.ServiceDesc{
	ServiceName: "agentrunner.bench.Loopback",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			ls := srv.(*loopbackServer)
			var req servicev1.ListAppsRequest // any message: the count comes from the server
			if err := stream.RecvMsg(&req); err != nil {
				return err
			}
			for range ls.count {
				if err := stream.SendMsg(ls.msg); err != nil {
					return err
				}
			}
			return nil
		},
	}},
}

type loopbackServer struct {
	msg   proto.Message
	count int
}

// measureStream streams count copies of msg on each of streams concurrent
// server streams over one loopback connection, as the bench client reads
// the Run streams, and returns the receive rate.
func measureStream(ctx context.Context, msg proto.Message, streams, count int) (StreamLimit, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return StreamLimit{}, fmt.Errorf("stream probe: %w", err)
	}
	srv := grpc.NewServer()
	srv.RegisterService(&loopbackDesc, &loopbackServer{msg: msg, count: count})
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return StreamLimit{}, fmt.Errorf("stream probe: %w", err)
	}
	defer conn.Close()
	desc := &loopbackDesc.Streams[0]
	method := "/" + loopbackDesc.ServiceName + "/" + desc.StreamName
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	start := time.Now()
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				cs, err := conn.NewStream(ctx, desc, method)
				if err != nil {
					return err
				}
				if err := cs.SendMsg(&servicev1.ListAppsRequest{}); err != nil {
					return err
				}
				if err := cs.CloseSend(); err != nil {
					return err
				}
				var resp servicev1.RunResponse
				for {
					if err := cs.RecvMsg(&resp); errors.Is(err, io.EOF) {
						return nil
					} else if err != nil {
						return err
					}
				}
			}()
			if err != nil {
				mu.Lock()
				firstErr = errors.Join(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return StreamLimit{}, fmt.Errorf("stream probe: %w", firstErr)
	}
	return StreamLimit{
		MessageBytes: proto.Size(msg),
		Streams:      streams,
		MsgsPerSec:   float64(streams*count) / elapsed.Seconds(),
	}, nil
}
