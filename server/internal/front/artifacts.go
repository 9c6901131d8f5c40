package front

import (
	"context"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

func (d *Desk) SaveArtifact(ctx context.Context, req *servicev1.SaveArtifactRequest) (*servicev1.SaveArtifactResponse, error) {
	k, err := validateSaveArtifact(req)
	if err == nil {
		err = d.checkArtifactLimit(req.GetArtifact())
	}
	if err != nil {
		return nil, err
	}
	v, err := d.store.SaveArtifact(ctx, k, req.GetFilename(), req.GetArtifact())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.SaveArtifactResponse{Version: v.GetVersion(), ArtifactVersion: v}, nil
}

func (d *Desk) LoadArtifact(ctx context.Context, req *servicev1.LoadArtifactRequest) (*servicev1.LoadArtifactResponse, error) {
	k, err := validateLoadArtifact(req)
	if err != nil {
		return nil, err
	}
	part, v, err := d.store.LoadArtifact(ctx, k, req.GetFilename(), req.GetVersion())
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.LoadArtifactResponse{Artifact: part, ArtifactVersion: v}, nil
}

func (d *Desk) ListArtifacts(ctx context.Context, req *servicev1.ListArtifactsRequest) (*servicev1.ListArtifactsResponse, error) {
	k, err := validateListArtifacts(req)
	if err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	arts, next, err := d.store.ListArtifacts(ctx, k, page(req, d.maxMsg))
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListArtifactsResponse{Artifacts: arts, NextPageToken: next}, nil
}

func (d *Desk) ListArtifactVersions(ctx context.Context, req *servicev1.ListArtifactVersionsRequest) (*servicev1.ListArtifactVersionsResponse, error) {
	k, err := validateListArtifactVersions(req)
	if err != nil {
		return nil, err
	}
	if err := d.checkPage(req); err != nil {
		return nil, err
	}
	versions, next, err := d.store.ListArtifactVersions(ctx, k, req.GetFilename(), page(req, d.maxMsg))
	if err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.ListArtifactVersionsResponse{Versions: versions, NextPageToken: next}, nil
}

func (d *Desk) DeleteArtifact(ctx context.Context, req *servicev1.DeleteArtifactRequest) (*servicev1.DeleteArtifactResponse, error) {
	k, err := validateDeleteArtifact(req)
	if err != nil {
		return nil, err
	}
	if err := d.store.DeleteArtifact(ctx, k, req.GetFilename(), req.GetVersion()); err != nil {
		return nil, d.toStatus(ctx, err)
	}
	return &servicev1.DeleteArtifactResponse{}, nil
}
