package server

import (
	"context"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/grpc/codes"
)

func TestArtifactServiceHappyPath(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.createSession(t, "app", "u1", "s1")
	e.createSession(t, "app", "u1", "s2")

	save := func(session, name string, p *agentrunnerv1.Part) int64 {
		t.Helper()
		resp, err := e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: session, Filename: name, Artifact: p})
		if err != nil {
			t.Fatalf("SaveArtifact(%s, %s): %v", session, name, err)
		}
		if resp.GetVersion() != resp.GetArtifactVersion().GetVersion() {
			t.Errorf("version %d != artifact_version.version %d", resp.GetVersion(), resp.GetArtifactVersion().GetVersion())
		}
		return resp.GetVersion()
	}
	blob := func(s string) *agentrunnerv1.Part {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: "text/plain", Data: []byte(s)}}}
	}
	if v := save("s1", "notes.txt", blob("one")); v != 1 {
		t.Errorf("first version = %d, want 1", v)
	}
	if v := save("s1", "notes.txt", blob("two")); v != 2 {
		t.Errorf("second version = %d, want 2", v)
	}
	save("s1", "user:profile", &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "likes tea"}})

	load := func(session, name string, version int64) string {
		t.Helper()
		resp, err := e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: session, Filename: name, Version: version})
		if err != nil {
			t.Fatalf("LoadArtifact(%s, %s, %d): %v", session, name, version, err)
		}
		if p := resp.GetArtifact(); p.GetText() != "" {
			return p.GetText()
		}
		return string(resp.GetArtifact().GetInlineData().GetData())
	}
	if got := load("s1", "notes.txt", 0); got != "two" {
		t.Errorf("latest = %q, want two", got)
	}
	if got := load("s1", "notes.txt", 1); got != "one" {
		t.Errorf("version 1 = %q, want one", got)
	}
	// user: artifacts are visible from the user's other sessions.
	if got := load("s2", "user:profile", 0); got != "likes tea" {
		t.Errorf("user:profile from s2 = %q", got)
	}

	list, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatalf("ListArtifacts: %v", err)
	}
	var names []string
	for _, a := range list.GetArtifacts() {
		names = append(names, a.GetFilename())
	}
	if strings.Join(names, ",") != "notes.txt,user:profile" {
		t.Errorf("ListArtifacts = %q", names)
	}

	versions, err := e.artifacts.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "notes.txt"})
	if err != nil {
		t.Fatalf("ListArtifactVersions: %v", err)
	}
	if v := versions.GetVersions(); len(v) != 2 || v[0].GetVersion() != 2 || v[1].GetVersion() != 1 {
		t.Errorf("ListArtifactVersions = %v, want 2 then 1", v)
	}

	if _, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "notes.txt"}); err != nil {
		t.Fatalf("DeleteArtifact: %v", err)
	}
	_, err = e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "notes.txt"})
	wantCode(t, err, codes.NotFound, "")
}

func TestArtifactServiceErrors(t *testing.T) {
	e := newEnv(t)
	e.createSession(t, "app", "u1", "s1")
	txt := &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: "x"}}
	if _, err := e.artifacts.SaveArtifact(t.Context(), &servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f", Artifact: txt}); err != nil {
		t.Fatal(err)
	}
	save := func(r *servicev1.SaveArtifactRequest) func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.artifacts.SaveArtifact(ctx, r); return err }
	}
	load := func(r *servicev1.LoadArtifactRequest) func(context.Context) error {
		return func(ctx context.Context) error { _, err := e.artifacts.LoadArtifact(ctx, r); return err }
	}

	tests := []struct {
		name  string
		call  func(context.Context) error
		code  codes.Code
		field string
	}{
		{"save/no filename", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Artifact: txt}), codes.InvalidArgument, "filename"},
		{"save/long filename", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: strings.Repeat("f", 1025), Artifact: txt}), codes.InvalidArgument, "filename"},
		{"save/no artifact", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f"}), codes.InvalidArgument, "artifact"},
		{"save/empty artifact", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f", Artifact: &agentrunnerv1.Part{}}), codes.InvalidArgument, "artifact"},
		{"save/function call artifact", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f",
			Artifact: &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Name: "f"}}}}), codes.InvalidArgument, "artifact"},
		{"save/no session id", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", Filename: "f", Artifact: txt}), codes.InvalidArgument, "session_id"},
		{"save/missing session", save(&servicev1.SaveArtifactRequest{AppName: "app", UserId: "u1", SessionId: "nope", Filename: "f", Artifact: txt}), codes.NotFound, ""},
		{"load/negative version", load(&servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f", Version: -1}), codes.InvalidArgument, "version"},
		{"load/no filename", load(&servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1"}), codes.InvalidArgument, "filename"},
		{"load/missing artifact", load(&servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "nope"}), codes.NotFound, ""},
		{"load/missing version", load(&servicev1.LoadArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f", Version: 7}), codes.NotFound, ""},
		{"list/negative page_size", func(ctx context.Context) error {
			_, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1", PageSize: -1})
			return err
		}, codes.InvalidArgument, "page_size"},
		{"list/bad token", func(ctx context.Context) error {
			_, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: "app", UserId: "u1", SessionId: "s1", PageToken: "??"})
			return err
		}, codes.InvalidArgument, ""},
		{"versions/no filename", func(ctx context.Context) error {
			_, err := e.artifacts.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
			return err
		}, codes.InvalidArgument, "filename"},
		{"versions/negative page_size", func(ctx context.Context) error {
			_, err := e.artifacts.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "f", PageSize: -2})
			return err
		}, codes.InvalidArgument, "page_size"},
		{"delete/no filename", func(ctx context.Context) error {
			_, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1"})
			return err
		}, codes.InvalidArgument, "filename"},
		{"delete/missing", func(ctx context.Context) error {
			_, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: "app", UserId: "u1", SessionId: "s1", Filename: "nope"})
			return err
		}, codes.NotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.call(t.Context()), tc.code, tc.field)
		})
	}
}
