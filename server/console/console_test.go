package console

import (
	"io/fs"
	"strings"
	"testing"
)

// The page server/web falls back to must be there, with the base element
// it rewrites for --http-prefix.
func TestFSHasIndex(t *testing.T) {
	b, err := fs.ReadFile(FS(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>agentrunner console</title>", `<base href="/">`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
}
