package chat

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// forkFlags are the flags of "sessions fork" and "sessions rewind".
type forkFlags struct {
	at      *int64
	newUser *string
	newID   *string
	before  *string
}

func registerForkFlags(fs *flag.FlagSet) forkFlags {
	return forkFlags{
		at:      fs.Int64("at", -1, "fork: the last event (sequence) the fork holds; 0 holds none; default the session's last"),
		newUser: fs.String("new-user", "", "fork: owner of the fork (another user than --user is for admins); default --user"),
		newID:   fs.String("new-id", "", "fork: id of the fork; default a random id"),
		before:  fs.String("before", "", "rewind: the run (invocation id) to go back to before; see \"agentrunner runs list\""),
	}
}

const forkUsage = "  agentrunner sessions fork   [--app APP] [--user U] [--at SEQ] [--new-user U2] [--new-id ID] SESSION\n" +
	"  agentrunner sessions rewind [--app APP] [--user U] --before RUN_ID SESSION\n"

// forkSession forks session id of app and user at ff.at (its last event
// when negative) and prints the fork.
func forkSession(ctx context.Context, sc servicev1.SessionServiceClient, stdout io.Writer, app, user, id string, ff forkFlags) error {
	at := *ff.at
	if at < 0 {
		got, err := sc.GetSession(ctx, &servicev1.GetSessionRequest{AppName: app, UserId: user, SessionId: id, NumRecentEvents: 1})
		if err != nil {
			return describe(err)
		}
		at = int64(got.GetSession().GetLastSequence())
	}
	resp, err := sc.ForkSession(ctx, &servicev1.ForkSessionRequest{
		AppName: app, UserId: user, SessionId: id, UpToSequence: uint64(at),
		NewUserId: *ff.newUser, NewSessionId: *ff.newID,
	})
	if err != nil {
		return describe(err)
	}
	s := resp.GetSession()
	fmt.Fprintf(stdout, "forked session %s (user %s) from %s at event %d: %d events, state %s\n",
		s.GetSessionId(), s.GetUserId(), id, at, s.GetLastSequence(), Compact(s.GetState()))
	return nil
}

// rewindSession rewinds session id to before run ff.before and prints
// the rewind event and the state it restored.
func rewindSession(ctx context.Context, sc servicev1.SessionServiceClient, stdout io.Writer, app, user, id string, ff forkFlags) error {
	if *ff.before == "" {
		return fmt.Errorf("sessions rewind: --before RUN_ID is required: %w", ErrUsage)
	}
	resp, err := sc.RewindSession(ctx, &servicev1.RewindSessionRequest{AppName: app, UserId: user, SessionId: id, BeforeInvocationId: *ff.before})
	if err != nil {
		return describe(err)
	}
	ev := resp.GetEvent()
	fmt.Fprintf(stdout, "rewound session %s to before run %s: event #%d, state %s\n",
		id, *ff.before, ev.GetSequence(), Compact(resp.GetSession().GetState()))
	for _, name := range slices.Sorted(maps.Keys(ev.GetActions().GetArtifactDelta())) {
		fmt.Fprintf(stdout, "artifact %s restored as version %d\n", name, ev.GetActions().GetArtifactDelta()[name])
	}
	return nil
}
