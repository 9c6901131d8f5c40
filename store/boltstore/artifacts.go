package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// checkSession returns ErrNotFound when need is set and session k does not
// exist.
func checkSession(tx *bbolt.Tx, k store.SessionKey, need bool) error {
	if !need {
		return nil
	}
	_, err := getSession(tx, k, sessionKey(k))
	return err
}

// SaveArtifact implements store.Store.
func (s *Store) SaveArtifact(ctx context.Context, k store.SessionKey, filename string, part *agentrunnerv1.Part) (*agentrunnerv1.ArtifactVersion, error) {
	need, meta, blob, err := store.NewArtifactVersion(k, filename, part, s.opts.Now(), s.opts.MaxItemBytes, checkPart)
	if err != nil {
		return nil, err
	}
	var out *agentrunnerv1.ArtifactVersion
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		if err := checkSession(tx, k, need); err != nil {
			return err
		}
		nameKey := artifactNameKey(k, filename)
		arts := tx.Bucket(bucketArtifacts)
		var version int64 = 1
		if key, _ := arts.Cursor().Seek(nameKey); key != nil && bytes.HasPrefix(key, nameKey) {
			version = versionFromKey(key) + 1 // the first key is the newest version
		}
		m := meta.CloneVT()
		m.Version = version
		mb, err := proto.Marshal(m)
		if err != nil {
			return fmt.Errorf("marshal artifact version: %w", err)
		}
		vk := artifactVersionKey(nameKey, version)
		if err := put(arts, vk, mb); err != nil {
			return err
		}
		if err := put(tx.Bucket(bucketBlobs), vk, blob); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LoadArtifact implements store.Store.
func (s *Store) LoadArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) (*agentrunnerv1.Part, *agentrunnerv1.ArtifactVersion, error) {
	need, err := store.CheckArtifactVersion(k, filename, version, checkPart)
	if err != nil {
		return nil, nil, err
	}
	var (
		part *agentrunnerv1.Part
		meta *agentrunnerv1.ArtifactVersion
	)
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		if err := checkSession(tx, k, need); err != nil {
			return err
		}
		nameKey := artifactNameKey(k, filename)
		var key, v []byte
		if version == 0 {
			key, v = tx.Bucket(bucketArtifacts).Cursor().Seek(nameKey)
			if key != nil && !bytes.HasPrefix(key, nameKey) {
				key = nil
			}
		} else {
			key = artifactVersionKey(nameKey, version)
			v = tx.Bucket(bucketArtifacts).Get(key)
			if v == nil {
				key = nil
			}
		}
		if key == nil {
			return store.ArtifactNotFound(k, filename, version)
		}
		meta = &agentrunnerv1.ArtifactVersion{}
		if err := proto.Unmarshal(v, meta); err != nil {
			return fmt.Errorf("decode artifact version: %w", err)
		}
		part = &agentrunnerv1.Part{}
		if err := proto.Unmarshal(tx.Bucket(bucketBlobs).Get(key), part); err != nil {
			return fmt.Errorf("decode artifact: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return part, meta, nil
}

// latestPerName walks the artifacts under prefix (one scope) from the first
// name after `after`, returning at most limit latest versions.
func latestPerName(c *bbolt.Cursor, prefix []byte, after string, limit int) ([]*agentrunnerv1.ArtifactVersion, error) {
	start := prefix
	if after != "" {
		start = successor(appendString(bytes.Clone(prefix), after))
	}
	var out []*agentrunnerv1.ArtifactVersion
	for key, v := c.Seek(start); key != nil && bytes.HasPrefix(key, prefix) && len(out) < limit; key, v = c.Seek(start) {
		name, _, err := readString(key[len(prefix):])
		if err != nil {
			return nil, err
		}
		m := &agentrunnerv1.ArtifactVersion{}
		if err := proto.Unmarshal(v, m); err != nil {
			return nil, fmt.Errorf("decode artifact version: %w", err)
		}
		out = append(out, m)
		// Jump over the older versions of this name.
		start = successor(appendString(bytes.Clone(prefix), name))
	}
	return out, nil
}

// ListArtifacts implements store.Store. It merges the session's own names
// with the user's "user:" names; the two sets never overlap. With no
// session it lists the user's names alone.
func (s *Store) ListArtifacts(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error) {
	need, err := store.CheckArtifactKey(k, "", checkPart)
	if err != nil {
		return nil, "", err
	}
	var after string
	if page.Token != "" {
		tok, err := decodeToken(page.Token)
		if err != nil {
			return nil, "", err
		}
		after = string(tok)
	}
	limit := page.Limit()
	var out []*agentrunnerv1.ArtifactVersion
	var next string
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		if err := checkSession(tx, k, need); err != nil {
			return err
		}
		c := tx.Bucket(bucketArtifacts).Cursor()
		var own []*agentrunnerv1.ArtifactVersion
		if need { // the user's scope is read below; the session's only if there is one
			if own, err = latestPerName(c, artifactPrefix(k.App, k.User, k.Session), after, limit+1); err != nil {
				return err
			}
		}
		shared, err := latestPerName(c, artifactPrefix(k.App, k.User, ""), after, limit+1)
		if err != nil {
			return err
		}
		for len(out) < limit+1 && (len(own) > 0 || len(shared) > 0) {
			if len(shared) == 0 || (len(own) > 0 && own[0].Filename < shared[0].Filename) {
				out, own = append(out, own[0]), own[1:]
			} else {
				out, shared = append(out, shared[0]), shared[1:]
			}
		}
		if len(out) > limit {
			out = out[:limit]
			next = encodeToken([]byte(out[limit-1].Filename))
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// ListArtifactVersions implements store.Store.
func (s *Store) ListArtifactVersions(ctx context.Context, k store.SessionKey, filename string, page store.Page) ([]*agentrunnerv1.ArtifactVersion, string, error) {
	need, err := store.CheckArtifactName(k, filename, checkPart)
	if err != nil {
		return nil, "", err
	}
	nameKey := artifactNameKey(k, filename)
	start := nameKey
	if page.Token != "" {
		tok, err := decodeToken(page.Token)
		if err != nil {
			return nil, "", err
		}
		if len(tok) != 8 {
			return nil, "", fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument)
		}
		// Versions sort newest first; continue below the last one listed.
		start = appendUint64(bytes.Clone(nameKey), ^binary.BigEndian.Uint64(tok)+1)
	}
	limit := page.Limit()
	var out []*agentrunnerv1.ArtifactVersion
	var next string
	err = s.view(ctx, func(tx *bbolt.Tx) error {
		if err := checkSession(tx, k, need); err != nil {
			return err
		}
		c := tx.Bucket(bucketArtifacts).Cursor()
		for key, v := c.Seek(start); key != nil && bytes.HasPrefix(key, nameKey); key, v = c.Next() {
			if len(out) == limit {
				next = encodeToken(appendUint64(nil, uint64(out[limit-1].Version)))
				return nil
			}
			m := &agentrunnerv1.ArtifactVersion{}
			if err := proto.Unmarshal(v, m); err != nil {
				return fmt.Errorf("decode artifact version: %w", err)
			}
			out = append(out, m)
		}
		if len(out) == 0 && page.Token == "" {
			return store.ArtifactNotFound(k, filename, 0)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// DeleteArtifact implements store.Store.
func (s *Store) DeleteArtifact(ctx context.Context, k store.SessionKey, filename string, version int64) error {
	need, err := store.CheckArtifactVersion(k, filename, version, checkPart)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *bbolt.Tx) error {
		if err := checkSession(tx, k, need); err != nil {
			return err
		}
		arts, blobs := tx.Bucket(bucketArtifacts), tx.Bucket(bucketBlobs)
		nameKey := artifactNameKey(k, filename)
		var keys [][]byte
		if version == 0 {
			keys = collectPrefix(arts, nameKey)
		} else if vk := artifactVersionKey(nameKey, version); arts.Get(vk) != nil {
			// The versions left keep their order; the newest of them is
			// the first key, so it is the latest from now on.
			keys = [][]byte{vk}
		} else {
			return store.ArtifactNotFound(k, filename, version)
		}
		if len(keys) == 0 {
			return store.ArtifactNotFound(k, filename, 0)
		}
		for _, key := range keys {
			if err := del(arts, key); err != nil {
				return err
			}
			if err := del(blobs, key); err != nil {
				return err
			}
		}
		return nil
	})
}
