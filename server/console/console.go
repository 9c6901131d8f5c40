// Package console holds the web console's files, embedded in the binary:
// server/web serves them at the root of --http-addr (under --http-prefix).
//
// dist/ is committed build output, so that a clone builds without Node.
// Whatever builds the console writes into dist/ and commits it; the Go
// side needs nothing else. The contract with server/web:
//
//   - dist/index.html is the page. Every GET path that is neither a file
//     of dist/ nor an RPC gets it (deep links), with status 200.
//   - A `<base href="/">` in index.html is rewritten to the prefix the
//     server is mounted under (`<base href="/agentrunner/">`), so that
//     relative asset URLs resolve from any deep link behind a reverse
//     proxy. Asset URLs should therefore be relative ("app.js", not
//     "/app.js").
//   - A missing file whose name has an extension (app.js) is 404, not
//     the page: a broken build should fail loudly.
//
// dist/ must not be empty: `go:embed` refuses a pattern with no files.
package console

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// FS returns the console's files, rooted at dist/ (so "index.html").
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		// "dist" is a valid path and embedded: fs.Sub cannot fail on it.
		panic(err)
	}
	return sub
}
