package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// artifactLockClass is the first key of the advisory locks that
// serialize the saves of one artifact (the second is a hash of its name):
// its next version number is read and written in one transaction.
const artifactLockClass int32 = 0x6172 // "ar"

// SaveArtifact implements store.Store.
func (s *Store) SaveArtifact(ctx context.Context, k store.SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error) {
	need, meta, blob, err := store.NewArtifactVersion(k, filename, part, s.opts.Now(), s.opts.MaxItemBytes, checkPart)
	if err != nil {
		return nil, err
	}
	scope := store.ArtifactScope(k, filename)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if need {
			// FOR SHARE: the session cannot be deleted under the save.
			var one int
			err := tx.QueryRow(ctx, "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3 FOR SHARE",
				k.App, k.User, k.Session).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
			} else if err != nil {
				return fmt.Errorf("read session %s: %w", k, err)
			}
		}
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2 || '/' || $3 || '/' || $4 || '/' || $5))",
			artifactLockClass, k.App, k.User, scope, filename); err != nil {
			return fmt.Errorf("lock artifact: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) + 1 FROM artifacts
			WHERE app_name = $1 AND user_id = $2 AND scope = $3 AND filename = $4`, k.App, k.User, scope, filename).Scan(&meta.Version); err != nil {
			return fmt.Errorf("next artifact version: %w", err)
		}
		mb, err := proto.Marshal(meta)
		if err != nil {
			return fmt.Errorf("marshal artifact version: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO artifacts (app_name, user_id, scope, filename, version, meta, part)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, k.App, k.User, scope, filename, meta.Version, mb, blob)
		if err != nil {
			return fmt.Errorf("insert artifact: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return meta, nil
}

// SQL of LoadArtifact. $3 is the session, $4 the scope of the name, $6
// the version (0 for the latest).
const (
	// sqlLoadArtifact reads the session (to tell a missing session from
	// a missing artifact) and the version.
	sqlLoadArtifact = `SELECT a.meta, a.part FROM sessions s
		LEFT JOIN LATERAL (SELECT meta, part FROM artifacts
			WHERE app_name = $1 AND user_id = $2 AND scope = $4 AND filename = $5 AND ($6 = 0 OR version = $6)
			ORDER BY version DESC LIMIT 1) a ON true
		WHERE s.app_name = $1 AND s.user_id = $2 AND s.session_id = $3`
	// sqlLoadUserArtifact reads a "user:" version given no session ($3
	// is empty and unused).
	sqlLoadUserArtifact = `SELECT meta, part FROM artifacts
		WHERE app_name = $1 AND user_id = $2 AND $3 = '' AND scope = $4 AND filename = $5 AND ($6 = 0 OR version = $6)
		ORDER BY version DESC LIMIT 1`
)

// LoadArtifact implements store.Store. One query reads the session (to
// tell a missing session from a missing artifact) and the version.
func (s *Store) LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error) {
	need, err := store.CheckArtifactVersion(k, filename, version, checkPart)
	if err != nil {
		return nil, nil, err
	}
	var (
		part *agentrunnerv1.Part
		meta *agentrunnerv1.ArtifactVersion
	)
	q := sqlLoadArtifact
	if !need {
		q = sqlLoadUserArtifact
	}
	err = s.query(ctx, func() error {
		var mb, pb []byte
		err := s.pool.QueryRow(ctx, q, k.App, k.User, k.Session, store.ArtifactScope(k, filename), filename, version).Scan(&mb, &pb)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && need:
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		case errors.Is(err, pgx.ErrNoRows):
			mb = nil
			fallthrough
		case err == nil && mb == nil:
			return store.ArtifactNotFound(k, filename, version)
		case err != nil:
			return fmt.Errorf("load artifact: %w", err)
		}
		meta, part = &agentrunnerv1.ArtifactVersion{}, &agentrunnerv1.Part{}
		if err := proto.Unmarshal(mb, meta); err != nil {
			return fmt.Errorf("decode artifact version: %w", err)
		}
		if err := proto.Unmarshal(pb, part); err != nil {
			return fmt.Errorf("decode artifact: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return part, meta, nil
}

// ListArtifacts implements store.Store: the latest version of each of
// the session's own names and of the user's "user:" names (the two sets
// never overlap), by name, read from the primary key's ranges.
func (s *Store) ListArtifacts(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error) {
	need, err := store.CheckArtifactKey(k, "", checkPart)
	if err != nil {
		return nil, "", err
	}
	var after string
	if page.Token != "" {
		if after, err = decodeString(page.Token); err != nil {
			return nil, "", err
		}
	}
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.ArtifactVersion
		next string
	)
	err = s.query(ctx, func() error {
		if err := checkSession(ctx, s.pool, k, need); err != nil {
			return err
		}
		// One range of the primary key per scope, each walked in name
		// order (an incremental sort puts a name's newest version first).
		// With no session ($6 false) only the user's scope is read.
		rows, err := s.pool.Query(ctx, `SELECT meta FROM (
			(SELECT DISTINCT ON (filename) filename, meta FROM artifacts
				WHERE $6 AND app_name = $1 AND user_id = $2 AND scope = $3 AND filename > $4
				ORDER BY filename, version DESC LIMIT $5)
			UNION ALL
			(SELECT DISTINCT ON (filename) filename, meta FROM artifacts
				WHERE app_name = $1 AND user_id = $2 AND scope = '' AND filename > $4
				ORDER BY filename, version DESC LIMIT $5)
			) a ORDER BY filename LIMIT $5`, k.App, k.User, k.Session, after, limit+1, need)
		if err != nil {
			return fmt.Errorf("list artifacts: %w", err)
		}
		var mb []byte
		_, err = pgx.ForEachRow(rows, []any{&mb}, func() error {
			m := &agentrunnerv1.ArtifactVersion{}
			if err := proto.Unmarshal(mb, m); err != nil {
				return fmt.Errorf("decode artifact version: %w", err)
			}
			out = append(out, m)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		out = out[:limit]
		next = encodeString(out[limit-1].GetFilename())
	}
	return out, next, nil
}

// ListArtifactVersions implements store.Store.
func (s *Store) ListArtifactVersions(ctx context.Context, k store.SessionKey, filename string, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error) {
	need, err := store.CheckArtifactName(k, filename, checkPart)
	if err != nil {
		return nil, "", err
	}
	before := uint64(1) << 62 // past every version
	if page.Token != "" {
		if before, err = decodeNumber(page.Token); err != nil {
			return nil, "", err
		}
	}
	limit := page.Limit()
	var (
		out  []*agentrunnerv1.ArtifactVersion
		next string
	)
	err = s.query(ctx, func() error {
		if err := checkSession(ctx, s.pool, k, need); err != nil {
			return err
		}
		rows, err := s.pool.Query(ctx, `SELECT meta FROM artifacts
			WHERE app_name = $1 AND user_id = $2 AND scope = $3 AND filename = $4 AND version < $5
			ORDER BY version DESC LIMIT $6`, k.App, k.User, store.ArtifactScope(k, filename), filename, int64(before), limit+1)
		if err != nil {
			return fmt.Errorf("list artifact versions: %w", err)
		}
		var mb []byte
		_, err = pgx.ForEachRow(rows, []any{&mb}, func() error {
			m := &agentrunnerv1.ArtifactVersion{}
			if err := proto.Unmarshal(mb, m); err != nil {
				return fmt.Errorf("decode artifact version: %w", err)
			}
			out = append(out, m)
			return nil
		})
		if err == nil && len(out) == 0 && page.Token == "" {
			return store.ArtifactNotFound(k, filename, 0)
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if len(out) > limit {
		out = out[:limit]
		next = encodeNumber(uint64(out[limit-1].GetVersion()))
	}
	return out, next, nil
}

// checkSession returns ErrNotFound when need is set and session k does
// not exist.
func checkSession(ctx context.Context, q querier, k store.SessionKey, need bool) error {
	if !need {
		return nil
	}
	return sessionExists(ctx, q, k)
}

// DeleteArtifact implements store.Store.
func (s *Store) DeleteArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) error {
	need, err := store.CheckArtifactVersion(k, filename, version, checkPart)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := checkSession(ctx, tx, k, need); err != nil {
			return err
		}
		// Version 0 deletes every version. The versions left keep their
		// numbers; the greatest of them is the latest from now on.
		tag, err := tx.Exec(ctx, `DELETE FROM artifacts WHERE app_name = $1 AND user_id = $2 AND scope = $3 AND filename = $4
			AND ($5 = 0 OR version = $5)`, k.App, k.User, store.ArtifactScope(k, filename), filename, version)
		switch {
		case err != nil:
			return fmt.Errorf("delete artifact: %w", err)
		case tag.RowsAffected() > 0:
			return nil
		}
		return store.ArtifactNotFound(k, filename, version)
	})
}
