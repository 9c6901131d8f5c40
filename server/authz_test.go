package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/server/internal/front"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"
)

// withAuth turns authentication on with the principals of doc.
func withAuth(t *testing.T, doc string) envOption {
	cfg, err := auth.Parse("auth.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Auth = cfg }
}

func sha(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// matrixAuth: alice may use the echo app as herself, bob every app as
// himself, root everything.
var matrixAuth = `principals:
  - {name: alice, token_sha256: ` + sha("alice-token") + `, apps: [echo], users: [self]}
  - {name: bob, token_sha256: ` + sha("bob-token") + `, apps: ["*"], users: [self]}
  - {name: root, token_sha256: ` + sha("root-token") + `, admin: true}
`

// as is ctx with the caller's bearer token.
func as(ctx context.Context, principal string) context.Context {
	if principal == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+principal+"-token")
}

func sayHi(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) { yield(say("hi"), nil) }
}

// fixture is what one user owns: a session with a finished run and an
// artifact.
type fixture struct{ app, user, session, run, file string }

// newFixture makes user's things as root, through the API.
func (e *env) newFixture(t *testing.T, app, user, session string) fixture {
	t.Helper()
	ctx := as(t.Context(), "root")
	f := fixture{app: app, user: user, session: session, file: "notes.txt"}
	if _, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: app, UserId: user, SessionId: session}); err != nil {
		t.Fatal(err)
	}
	res := toResult(collectRun(t, must[servicev1.RunnerService_RunClient](t)(e.runner.Run(ctx, &servicev1.RunRequest{AppName: app, UserId: user, SessionId: session, NewMessage: text("hello")}))))
	if res.status != nil || len(res.runs) == 0 {
		t.Fatalf("fixture run: %v %v", res.status, res.runs)
	}
	f.run = res.runs[0].GetRunId()
	if _, err := e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: app, UserId: user, SessionId: session, Filename: f.file, Artifact: text("x").GetParts()[0]}); err != nil {
		t.Fatal(err)
	}
	return f
}

// snapshot is what a denied call must not change: the session's events,
// its artifacts and its run's status ("" when the session is gone).
func (e *env) snapshot(t *testing.T, f fixture) string {
	t.Helper()
	ctx := as(t.Context(), "root")
	s, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
	if status.Code(err) == codes.NotFound {
		return ""
	} else if err != nil {
		t.Fatal(err)
	}
	arts := must[*servicev1.ListArtifactsResponse](t)(e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: f.app, UserId: f.user, SessionId: f.session}))
	runs := must[*servicev1.ListRunsResponse](t)(e.runner.ListRuns(ctx, &servicev1.ListRunsRequest{AppName: f.app, UserId: f.user, SessionId: f.session}))
	var st []string
	for _, r := range runs.GetRuns() {
		st = append(st, r.GetStatus().String())
	}
	return fmt.Sprintf("events %d, artifacts %d, runs %v", s.GetSession().GetLastSequence(), len(arts.GetArtifacts()), st)
}

// rpcCase calls one RPC on a fixture.
type rpcCase struct {
	method string
	call   func(ctx context.Context, e *env, f fixture) error
	// allowed is the code a caller that may use f gets (OK unless said).
	allowed codes.Code
}

// streamErr reads a run stream to its end and returns its status.
func streamErr(s grpc.ServerStreamingClient[servicev1.RunResponse], err error) error {
	if err != nil {
		return err
	}
	for {
		if _, err := s.Recv(); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

// matrixCases call every RPC that touches a user's data.
func matrixCases() []rpcCase {
	return append(append(append(sessionCases(), runnerCases()...), scheduleCases()...), evalCases()...)
}

// sessionCases are the matrix cases of SessionService and ArtifactService.
func sessionCases() []rpcCase {
	return []rpcCase{
		{method: servicev1.SessionService_CreateSession_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.CreateSession(ctx, &servicev1.CreateSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session + "-new"})
			return err
		}},
		{method: servicev1.SessionService_GetSession_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.GetSession(ctx, &servicev1.GetSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.SessionService_ListSessions_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.ListSessions(ctx, &servicev1.ListSessionsRequest{AppName: f.app, UserId: f.user})
			return err
		}},
		{method: servicev1.SessionService_DeleteSession_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.DeleteSession(ctx, &servicev1.DeleteSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.SessionService_AppendEvent_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.AppendEvent(ctx, &servicev1.AppendEventRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Event: &agentrunnerv1.Event{Author: "user", Content: text("sneaky")}})
			return err
		}},
		{method: servicev1.SessionService_ListEvents_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.ListEvents(ctx, &servicev1.ListEventsRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.SessionService_ListToolCalls_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.ListToolCalls(ctx, &servicev1.ListToolCallsRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.SessionService_ForkSession_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.ForkSession(ctx, &servicev1.ForkSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session, UpToSequence: 1})
			return err
		}},
		{method: servicev1.SessionService_RewindSession_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.RewindSession(ctx, &servicev1.RewindSessionRequest{AppName: f.app, UserId: f.user, SessionId: f.session, BeforeInvocationId: f.run})
			return err
		}},
		{method: servicev1.SessionService_GetStateHistory_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.sessions.GetStateHistory(ctx, &servicev1.GetStateHistoryRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Key: "k"})
			return err
		}},
		{method: servicev1.ArtifactService_SaveArtifact_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.artifacts.SaveArtifact(ctx, &servicev1.SaveArtifactRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Filename: "other.txt", Artifact: text("y").GetParts()[0]})
			return err
		}},
		{method: servicev1.ArtifactService_LoadArtifact_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.artifacts.LoadArtifact(ctx, &servicev1.LoadArtifactRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Filename: f.file})
			return err
		}},
		{method: servicev1.ArtifactService_ListArtifacts_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.artifacts.ListArtifacts(ctx, &servicev1.ListArtifactsRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.ArtifactService_ListArtifactVersions_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.artifacts.ListArtifactVersions(ctx, &servicev1.ListArtifactVersionsRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Filename: f.file})
			return err
		}},
		{method: servicev1.ArtifactService_DeleteArtifact_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.artifacts.DeleteArtifact(ctx, &servicev1.DeleteArtifactRequest{AppName: f.app, UserId: f.user, SessionId: f.session, Filename: f.file})
			return err
		}},
	}
}

// runnerCases are the matrix cases of RunnerService, MemoryService and
// UsageService.
func runnerCases() []rpcCase {
	return []rpcCase{
		{method: servicev1.RunnerService_Run_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			return streamErr(e.runner.Run(ctx, &servicev1.RunRequest{AppName: f.app, UserId: f.user, SessionId: f.session, NewMessage: text("again")}))
		}},
		{method: servicev1.RunnerService_StartRun_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			resp, err := e.runner.StartRun(ctx, &servicev1.StartRunRequest{AppName: f.app, UserId: f.user, SessionId: f.session, NewMessage: text("again")})
			if err != nil {
				return err
			}
			// Wait for the run's end, so that it does not race the next case.
			return streamErr(e.runner.AttachRun(ctx, &servicev1.AttachRunRequest{RunId: resp.GetRun().GetRunId()}))
		}},
		{method: servicev1.RunnerService_ListRuns_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.runner.ListRuns(ctx, &servicev1.ListRunsRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.RunnerService_GetRun_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.runner.GetRun(ctx, &servicev1.GetRunRequest{RunId: f.run})
			return err
		}},
		{method: servicev1.RunnerService_GetRunTrace_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.runner.GetRunTrace(ctx, &servicev1.GetRunTraceRequest{RunId: f.run})
			return err
		}},
		{method: servicev1.RunnerService_CancelRun_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := e.runner.CancelRun(ctx, &servicev1.CancelRunRequest{RunId: f.run})
			return err
		}},
		{method: servicev1.RunnerService_AttachRun_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			return streamErr(e.runner.AttachRun(ctx, &servicev1.AttachRunRequest{RunId: f.run}))
		}},
		{method: servicev1.MemoryService_SearchMemory_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewMemoryServiceClient(e.conn).SearchMemory(ctx, &servicev1.SearchMemoryRequest{AppName: f.app, UserId: f.user, Query: "hi"})
			return err
		}},
		{method: servicev1.MemoryService_AddSessionToMemory_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewMemoryServiceClient(e.conn).AddSessionToMemory(ctx, &servicev1.AddSessionToMemoryRequest{AppName: f.app, UserId: f.user, SessionId: f.session})
			return err
		}},
		{method: servicev1.UsageService_GetUsage_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewUsageServiceClient(e.conn).GetUsage(ctx, &servicev1.GetUsageRequest{AppName: f.app, UserId: f.user})
			return err
		}},
		// The run has ended well: there is nothing to resume.
		{method: servicev1.RunnerService_ResumeRun_FullMethodName, allowed: codes.FailedPrecondition, call: func(ctx context.Context, e *env, f fixture) error {
			return streamErr(e.runner.ResumeRun(ctx, &servicev1.ResumeRunRequest{RunId: f.run}))
		}},
	}
}

// TestAuthorizationMatrix calls every RPC that touches a user's data as
// alice, bob and root on alice's and bob's things: each principal reaches
// its own, root reaches all, and every other call is PermissionDenied and
// changes nothing.
func TestAuthorizationMatrix(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi), customApp("other", sayHi)), withAuth(t, matrixAuth))
	cases := matrixCases()
	n := 0
	for _, c := range cases {
		for _, caller := range []string{"alice", "bob", "root"} {
			for _, target := range []struct{ app, user string }{{"echo", "alice"}, {"echo", "bob"}, {"other", "alice"}, {"other", "bob"}} {
				n++
				f := e.newFixture(t, target.app, target.user, fmt.Sprintf("s%d", n))
				before := e.snapshot(t, f)
				err := c.call(as(t.Context(), caller), e, f)
				// alice has only the echo app; bob every app.
				may := caller == "root" || caller == target.user && (caller == "bob" || target.app == "echo")
				name := fmt.Sprintf("%s as %s on %s/%s", c.method, caller, target.app, target.user)
				switch got := status.Code(err); {
				case may && got != c.allowed:
					t.Errorf("%s: %v, want %v", name, err, c.allowed)
				case !may && got != codes.PermissionDenied:
					t.Errorf("%s: %v, want PermissionDenied", name, err)
				case !may:
					if after := e.snapshot(t, f); after != before {
						t.Errorf("%s was denied and yet changed %s into %s", name, before, after)
					}
				}
			}
		}
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.method] = true
	}
	for m, rule := range front.MethodAccess() {
		if (rule == front.AccessScoped || rule == front.AccessRun) && !covered[m] {
			t.Errorf("%s is not in the matrix", m)
		}
	}
}

// TestAuthorizationNoExistenceLeak: what a principal may not see answers
// alike whether it exists or not, and the same question about its own
// things answers honestly.
func TestAuthorizationNoExistenceLeak(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withAuth(t, matrixAuth))
	bobs := e.newFixture(t, "echo", "bob", "real")
	alice := as(t.Context(), "alice")
	for _, runID := range []string{bobs.run, "no-such-run"} {
		_, err := e.runner.GetRun(alice, &servicev1.GetRunRequest{RunId: runID})
		if status.Code(err) != codes.PermissionDenied || statusMessage(err) != `no run "`+runID+`" this principal may use` {
			t.Errorf("GetRun(%s) as alice: %v", runID, err)
		}
		err = streamErr(e.runner.AttachRun(alice, &servicev1.AttachRunRequest{RunId: runID}))
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("AttachRun(%s) as alice: %v", runID, err)
		}
	}
	for _, sid := range []string{"real", "missing"} {
		_, err := e.sessions.GetSession(alice, &servicev1.GetSessionRequest{AppName: "echo", UserId: "bob", SessionId: sid})
		if status.Code(err) != codes.PermissionDenied || statusMessage(err) != `not granted user "bob" on app "echo"` {
			t.Errorf("GetSession(bob/%s) as alice: %v", sid, err)
		}
	}
	_, err := e.runner.GetRun(as(t.Context(), "root"), &servicev1.GetRunRequest{RunId: "no-such-run"})
	wantCode(t, err, codes.NotFound, "")
	_, err = e.sessions.GetSession(alice, &servicev1.GetSessionRequest{AppName: "echo", UserId: "alice", SessionId: "missing"})
	wantCode(t, err, codes.NotFound, "")
}

// TestAuthorizationListingAndApps: listing every user's sessions is for
// admins; ListApps shows a principal the apps it may use.
func TestAuthorizationListingAndApps(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi), customApp("other", sayHi)), withAuth(t, matrixAuth))
	e.newFixture(t, "echo", "alice", "a")
	e.newFixture(t, "echo", "bob", "b")
	for _, who := range []string{"alice", "bob"} {
		_, err := e.sessions.ListSessions(as(t.Context(), who), &servicev1.ListSessionsRequest{AppName: "echo"})
		wantCode(t, err, codes.PermissionDenied, "")
	}
	all, err := e.sessions.ListSessions(as(t.Context(), "root"), &servicev1.ListSessionsRequest{AppName: "echo"})
	if err != nil || len(all.GetSessions()) != 2 {
		t.Errorf("ListSessions of every user as root: %v, %v", all.GetSessions(), err)
	}
	mine, err := e.sessions.ListSessions(as(t.Context(), "alice"), &servicev1.ListSessionsRequest{AppName: "echo", UserId: "alice"})
	if err != nil || len(mine.GetSessions()) != 1 || mine.GetSessions()[0].GetUserId() != "alice" {
		t.Errorf("ListSessions of alice as alice: %v, %v", mine.GetSessions(), err)
	}
	for who, want := range map[string][]string{"alice": {"echo"}, "bob": {"echo", "other"}, "root": {"echo", "other"}} {
		resp, err := e.runner.ListApps(as(t.Context(), who), &servicev1.ListAppsRequest{})
		var got []string
		for _, a := range resp.GetApps() {
			got = append(got, a.GetName())
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ListApps as %s = %q, %v; want %q", who, got, err, want)
		}
	}
}

// TestAuthentication: without a valid credential every RPC is
// Unauthenticated, except health checks; each denial is logged once,
// without the token.
func TestAuthentication(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withAuth(t, matrixAuth))
	f := e.newFixture(t, "echo", "alice", "a")
	for _, md := range [][]string{nil, {"authorization", "Bearer wrong-token"}, {"authorization", "alice-token"}, {"authorization", "Basic alice-token"}} {
		ctx := t.Context()
		if md != nil {
			ctx = metadata.AppendToOutgoingContext(ctx, md...)
		}
		for _, c := range matrixCases() {
			if err := c.call(ctx, e, f); status.Code(err) != codes.Unauthenticated {
				t.Errorf("%s with %q: %v, want Unauthenticated", c.method, md, err)
			}
		}
		_, err := e.runner.ListApps(ctx, &servicev1.ListAppsRequest{})
		wantCode(t, err, codes.Unauthenticated, "")
		hc, err := healthpb.NewHealthClient(e.conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health check with %q: %v %v", md, hc, err)
		}
	}
	logs := e.logs.String()
	if strings.Contains(logs, "wrong-token") || strings.Contains(logs, "alice-token") {
		t.Errorf("a token reached the log:\n%s", logs)
	}
	// One line per denied call: 4 credentials × (the matrix + ListApps).
	want := 4 * (len(matrixCases()) + 1)
	if got := strings.Count(logs, `msg="access denied"`); got != want {
		t.Errorf("%d denials logged, want %d", got, want)
	}
	if !strings.Contains(logs, `level=WARN msg="access denied" principal="" method=/agentrunner.service.v1.SessionService/GetSession code=Unauthenticated reason="the bearer token matches no principal"`) {
		t.Errorf("no denial line for the wrong token in:\n%s", logs)
	}
}

// TestMethodAccessCoversEveryRPC walks every service the server registers
// (health and reflection included): each method needs an access rule, and
// each scoped method a request that names app_name and user_id.
func TestMethodAccessCoversEveryRPC(t *testing.T) {
	e := newEnv(t)
	rules := front.MethodAccess()
	n := 0
	for svc, info := range e.grpc.grpc.GetServiceInfo() {
		for _, m := range info.Methods {
			n++
			full := "/" + svc + "/" + m.Name
			rule, ok := rules[full]
			if !ok {
				t.Errorf("%s has no entry in front.MethodAccess", full)
				continue
			}
			if rule != front.AccessScoped {
				continue
			}
			d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc + "." + m.Name))
			if err != nil {
				t.Fatal(err)
			}
			in := d.(protoreflect.MethodDescriptor).Input().Fields()
			if in.ByName("app_name") == nil || in.ByName("user_id") == nil {
				t.Errorf("%s is scoped, but its request has no app_name and user_id", full)
			}
		}
	}
	if n < 20 {
		t.Errorf("walked %d methods; the server registers more", n)
	}
	// cmd/agentrunner registers lf.a2a.v1.A2AService beside ours (package
	// server/a2a serves it): its rules are front.MethodAccess's too.
	for _, full := range front.A2AMethods() {
		if rules[full] != front.AccessA2A {
			t.Errorf("%s has rule %v; want front.AccessA2A", full, rules[full])
		}
		n++
	}
	if len(rules) != n {
		t.Errorf("front.MethodAccess has %d rules for %d registered methods: remove the stale ones", len(rules), n)
	}
}

// TestAppStateIsAdminOnly: app: state is shared by every user of the app,
// so only an admin sets it from a client; everyone reads it.
func TestAppStateIsAdminOnly(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)), withAuth(t, matrixAuth))
	alice := as(t.Context(), "alice")
	st := func(k string) *structpb.Struct {
		return must[*structpb.Struct](t)(structpb.NewStruct(map[string]any{k: "v"}))
	}
	_, err := e.sessions.CreateSession(alice, &servicev1.CreateSessionRequest{AppName: "echo", UserId: "alice", SessionId: "s0", State: st("app:motd")})
	wantCode(t, err, codes.PermissionDenied, "")
	for _, k := range []string{"mine", "user:theme"} {
		if _, err := e.sessions.CreateSession(alice, &servicev1.CreateSessionRequest{AppName: "echo", UserId: "alice", SessionId: "s-" + strings.TrimPrefix(k, "user:"), State: st(k)}); err != nil {
			t.Errorf("CreateSession with %s as alice: %v", k, err)
		}
	}
	_, err = e.sessions.AppendEvent(alice, &servicev1.AppendEventRequest{AppName: "echo", UserId: "alice", SessionId: "s-mine",
		Event: &agentrunnerv1.Event{Author: "user", Actions: &agentrunnerv1.EventActions{StateDelta: st("app:motd")}}})
	wantCode(t, err, codes.PermissionDenied, "")
	err = streamErr(e.runner.Run(alice, &servicev1.RunRequest{AppName: "echo", UserId: "alice", SessionId: "s-mine", NewMessage: text("hi"), StateDelta: st("app:motd")}))
	wantCode(t, err, codes.PermissionDenied, "")
	_, err = e.runner.StartRun(alice, &servicev1.StartRunRequest{AppName: "echo", UserId: "alice", SessionId: "s-mine", NewMessage: text("hi"), StateDelta: st("app:motd")})
	wantCode(t, err, codes.PermissionDenied, "")
	if !strings.Contains(statusMessage(err), `state key "app:motd" is shared by every user of the app`) {
		t.Errorf("denial says %q", statusMessage(err))
	}

	root := as(t.Context(), "root")
	if _, err := e.sessions.CreateSession(root, &servicev1.CreateSessionRequest{AppName: "echo", UserId: "root", SessionId: "s", State: st("app:motd")}); err != nil {
		t.Fatal(err)
	}
	got, err := e.sessions.GetSession(alice, &servicev1.GetSessionRequest{AppName: "echo", UserId: "alice", SessionId: "s-mine"})
	if err != nil || got.GetSession().GetState().GetFields()["app:motd"].GetStringValue() != "v" {
		t.Errorf("alice does not read the app state root set: %v %v", got.GetSession().GetState(), err)
	}
}
