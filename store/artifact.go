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
// of filename: it checks that part holds text, inline_data or file_data,
// encodes it (blob, refused over maxItem bytes) and fills the version's
// metadata but the version number, created at now.
func NewArtifactVersion(filename string, part *agentrunnerv1.Part, now time.Time, maxItem int) (meta *agentrunnerv1.ArtifactVersion, blob []byte, err error) {
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
