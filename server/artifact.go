package server

import (
	"context"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// artifactService implements servicev1.ArtifactServiceServer.
type artifactService struct {
	// Embedded so that a missing RPC fails to compile.
	servicev1.UnsafeArtifactServiceServer
	s *Server
}

func (h artifactService) SaveArtifact(ctx context.Context, req *servicev1.SaveArtifactRequest) (*servicev1.SaveArtifactResponse, error) {
	k, err := validateSaveArtifact(req)
	if err == nil {
		err = h.s.checkArtifactLimit(req.GetArtifact())
	}
	if err != nil {
		return nil, err
	}
	v, err := h.s.store.SaveArtifact(ctx, k, req.GetFilename(), req.GetArtifact())
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.SaveArtifactResponse{Version: v.GetVersion(), ArtifactVersion: v}, nil
}

func (h artifactService) LoadArtifact(ctx context.Context, req *servicev1.LoadArtifactRequest) (*servicev1.LoadArtifactResponse, error) {
	k, err := validateLoadArtifact(req)
	if err != nil {
		return nil, err
	}
	part, v, err := h.s.store.LoadArtifact(ctx, k, req.GetFilename(), req.GetVersion())
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.LoadArtifactResponse{Artifact: part, ArtifactVersion: v}, nil
}

func (h artifactService) ListArtifacts(ctx context.Context, req *servicev1.ListArtifactsRequest) (*servicev1.ListArtifactsResponse, error) {
	k, err := validateListArtifacts(req)
	if err != nil {
		return nil, err
	}
	if err := h.s.checkPage(req); err != nil {
		return nil, err
	}
	arts, next, err := h.s.store.ListArtifacts(ctx, k, page(req, h.s.maxMsg))
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.ListArtifactsResponse{Artifacts: arts, NextPageToken: next}, nil
}

func (h artifactService) ListArtifactVersions(ctx context.Context, req *servicev1.ListArtifactVersionsRequest) (*servicev1.ListArtifactVersionsResponse, error) {
	k, err := validateListArtifactVersions(req)
	if err != nil {
		return nil, err
	}
	if err := h.s.checkPage(req); err != nil {
		return nil, err
	}
	versions, next, err := h.s.store.ListArtifactVersions(ctx, k, req.GetFilename(), page(req, h.s.maxMsg))
	if err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.ListArtifactVersionsResponse{Versions: versions, NextPageToken: next}, nil
}

func (h artifactService) DeleteArtifact(ctx context.Context, req *servicev1.DeleteArtifactRequest) (*servicev1.DeleteArtifactResponse, error) {
	k, err := validateDeleteArtifact(req)
	if err != nil {
		return nil, err
	}
	if err := h.s.store.DeleteArtifact(ctx, k, req.GetFilename(), req.GetVersion()); err != nil {
		return nil, h.s.toStatus(ctx, err)
	}
	return &servicev1.DeleteArtifactResponse{}, nil
}
