package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// CheckSize refuses an item of n encoded bytes over limit (none when
// limit is zero or less) with ErrInvalidArgument, naming what it is.
func CheckSize(what string, n, limit int) error {
	if limit > 0 && n > limit {
		return fmt.Errorf("%s of %d bytes exceeds the limit of %d bytes: %w", what, n, limit, ErrInvalidArgument)
	}
	return nil
}

// NewArtifactVersion is what every store does before it saves a version
// of filename under key k: it checks them (CheckArtifactName, with the
// store's check of key parts), checks that part holds text, inline_data or
// file_data, encodes it (blob, refused over maxItem bytes) and fills the
// version's metadata but the version number, created at now. needSession
// is whether k names a session, which must then exist.
func NewArtifactVersion(k SessionKey, filename string, part *agentrunnerv1.Part, now time.Time, maxItem int, check KeyCheck) (needSession bool, meta *agentrunnerv1.ArtifactVersion, blob []byte, err error) {
	if needSession, err = CheckArtifactName(k, filename, check); err != nil {
		return false, nil, nil, err
	}
	meta, blob, err = newArtifactVersion(filename, part, now, maxItem)
	return needSession, meta, blob, err
}

func newArtifactVersion(filename string, part *agentrunnerv1.Part, now time.Time, maxItem int) (meta *agentrunnerv1.ArtifactVersion, blob []byte, err error) {
	var mime string
	var data []byte
	switch d := part.GetData().(type) {
	case *agentrunnerv1.Part_Text:
		mime, data = "text/plain", []byte(d.Text)
	case *agentrunnerv1.Part_InlineData:
		mime, data = d.InlineData.GetMimeType(), d.InlineData.GetData()
	case *agentrunnerv1.Part_FileData:
		mime, data = d.FileData.GetMimeType(), []byte(d.FileData.GetFileUri())
	default:
		return nil, nil, fmt.Errorf("artifact must hold text, inline_data or file_data: %w", ErrInvalidArgument)
	}
	if blob, err = proto.Marshal(part); err != nil {
		return nil, nil, fmt.Errorf("marshal artifact: %w", err)
	}
	if err := CheckSize("artifact "+filename, len(blob), maxItem); err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(data)
	return &agentrunnerv1.ArtifactVersion{
		Filename:   filename,
		MimeType:   mime,
		SizeBytes:  int64(len(data)),
		Sha256:     hex.EncodeToString(sum[:]),
		CreateTime: timestamppb.New(now),
	}, blob, nil
}

// CheckArtifactKey is ArtifactKey for a store whose key parts pass
// check: every store validates an artifact method's key this way before
// it reads anything, so that they refuse the same keys with the same
// errors.
func CheckArtifactKey(k SessionKey, filename string, check KeyCheck) (needSession bool, err error) {
	if needSession, err = ArtifactKey(k, filename); err != nil {
		return false, err
	}
	return needSession, checkAll(check, k.App, k.User, k.Session)
}

// CheckArtifactName is CheckArtifactKey for a method on one artifact:
// its filename must also be set and pass check. The key is checked
// first, so that a bad key is reported before a bad name in every store.
func CheckArtifactName(k SessionKey, filename string, check KeyCheck) (needSession bool, err error) {
	if needSession, err = CheckArtifactKey(k, filename, check); err != nil {
		return false, err
	}
	if filename == "" {
		return false, fmt.Errorf("filename is empty: %w", ErrInvalidArgument)
	}
	return needSession, check(filename)
}

// CheckArtifactVersion is CheckArtifactName for a method given a version
// number (LoadArtifact, DeleteArtifact), where 0 means the latest or
// every version and a negative one is refused.
func CheckArtifactVersion(k SessionKey, filename string, version int64, check KeyCheck) (needSession bool, err error) {
	if needSession, err = CheckArtifactName(k, filename, check); err != nil {
		return false, err
	}
	if version < 0 {
		return false, fmt.Errorf("version %d is negative: %w", version, ErrInvalidArgument)
	}
	return needSession, nil
}

// ArtifactScope returns the session an artifact name is kept under: ""
// for a "user:" name, which every session of the user shares. Both stores
// key artifacts by it.
func ArtifactScope(k SessionKey, filename string) string {
	if ScopeOf(filename) == ScopeUser {
		return ""
	}
	return k.Session
}

// ArtifactNotFound is the ErrNotFound of an artifact method that finds
// no version of filename (version 0) or not the version asked for, worded
// alike in every store.
func ArtifactNotFound(k SessionKey, filename string, version int64) error {
	if version == 0 {
		return fmt.Errorf("artifact %q in session %s: %w", filename, k, ErrNotFound)
	}
	return fmt.Errorf("artifact %q version %d in session %s: %w", filename, version, k, ErrNotFound)
}
