package storecopy

import (
	"context"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// Verification is what Verify found.
type Verification struct {
	// Sessions is how many sessions both stores hold, equal by checksum.
	Sessions int
	// Events, Runs, Artifacts, ToolCalls count their records.
	Events, Runs, Artifacts, ToolCalls int
	// SharedChecksum is the checksum of the shared records, the same in
	// both stores.
	SharedChecksum string
}

// Verify checks that dst holds exactly what src holds: the same sessions,
// each with the same checksum (and so the same counts of events, runs,
// artifacts and tool calls), and the same shared records.
func Verify(ctx context.Context, src, dst Source, pageSize int) (Verification, error) {
	var v Verification
	if pageSize <= 0 {
		pageSize = 500
	}
	var after store.SessionKey
	for {
		sk, err := src.SessionKeys(ctx, after, pageSize)
		if err != nil {
			return v, err
		}
		dk, err := dst.SessionKeys(ctx, after, pageSize)
		if err != nil {
			return v, err
		}
		if len(sk) != len(dk) {
			return v, fmt.Errorf("after %s the source lists %d sessions, the target %d", after, len(sk), len(dk))
		}
		for i, k := range sk {
			if dk[i] != k {
				return v, fmt.Errorf("the source's next session is %s, the target's %s", k, dk[i])
			}
			if err := verifySession(ctx, src, dst, k, &v); err != nil {
				return v, err
			}
		}
		if len(sk) == 0 {
			break
		}
		after = sk[len(sk)-1]
	}
	return v, verifyShared(ctx, src, dst, &v)
}

func verifySession(ctx context.Context, src, dst Source, k store.SessionKey, v *Verification) error {
	s, err := src.ExportSession(ctx, k)
	if err != nil {
		return err
	}
	if err := sameSession(ctx, s, dst); err != nil {
		return err
	}
	v.Sessions++
	v.Events += len(s.Events)
	v.Runs += len(s.Runs)
	v.Artifacts += len(s.Artifacts)
	v.ToolCalls += len(s.ToolCalls)
	return nil
}

func verifyShared(ctx context.Context, src, dst Source, v *Verification) error {
	var sums [2]string
	for i, st := range []Source{src, dst} {
		sh, err := st.ExportShared(ctx)
		if err != nil {
			return err
		}
		if sums[i], err = SharedChecksum(sh); err != nil {
			return err
		}
	}
	if sums[0] != sums[1] {
		return fmt.Errorf("the shared records differ: checksum %s in the source, %s in the target", sums[0], sums[1])
	}
	v.SharedChecksum = sums[0]
	return nil
}
