package front

import (
	"context"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxQueryBytes bounds a memory query: a few sentences at most, each of
// whose words costs a seek in the index.
const maxQueryBytes = 4096

func (d *Desk) SearchMemory(ctx context.Context, req *servicev1.SearchMemoryRequest) (*servicev1.SearchMemoryResponse, error) {
	if err := validateSearchMemory(req); err != nil {
		return nil, err
	}
	if d.memory == nil {
		return nil, status.Error(codes.FailedPrecondition, "memory is not configured on this server")
	}
	entries, next, err := d.memory.Search(ctx, memory.Query{
		App: req.GetAppName(), User: req.GetUserId(), Query: req.GetQuery(),
		Limit: int(req.GetPageSize()), PageToken: req.GetPageToken(), MaxBytes: d.maxMsg - responseSlack,
	})
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	resp := &servicev1.SearchMemoryResponse{NextPageToken: next, Memories: make([]*servicev1.Memory, 0, len(entries))}
	for _, e := range entries {
		resp.Memories = append(resp.Memories, &servicev1.Memory{
			SessionId: e.SessionID, Author: e.Author, Content: e.Content,
			Time: timestamppb.New(e.Time), EventSequence: e.Sequence,
		})
	}
	return resp, nil
}

func (d *Desk) AddSessionToMemory(ctx context.Context, req *servicev1.AddSessionToMemoryRequest) (*servicev1.AddSessionToMemoryResponse, error) {
	k, err := sessionKey(req)
	if err != nil {
		return nil, err
	}
	if d.memory == nil {
		return nil, status.Error(codes.FailedPrecondition, "memory is not configured on this server")
	}
	if err := d.memory.AddSession(ctx, k); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.AddSessionToMemoryResponse{}, nil
}

func validateSearchMemory(r *servicev1.SearchMemoryRequest) error {
	if err := checkID("app_name", r.GetAppName()); err != nil {
		return err
	}
	if err := checkID("user_id", r.GetUserId()); err != nil {
		return err
	}
	// Queries are free text: newlines and tabs are fine, their length
	// is bounded.
	switch q := r.GetQuery(); {
	case q == "":
		return invalid("query", "required")
	case len(q) > maxQueryBytes:
		return invalid("query", "%d bytes, longer than the limit of %d", len(q), maxQueryBytes)
	}
	return checkPageSize(r.GetPageSize())
}
