// Package seal holds the key that opens the runner's sealed accessors.
//
// Some functions of package agent hand out what no agent, callback or
// caller may hold: the session's stored event instances, shared with the
// runner's history cache. They take a Key as an argument. Go lets only code
// under runner/ import this package, so only that code can name the type
// and make a Key: everyone else cannot call those functions at all.
//
// It imports nothing and must import nothing.
package seal

// Key is the argument of a sealed accessor. The zero value is the key.
type Key struct{ _ [0]func() }
