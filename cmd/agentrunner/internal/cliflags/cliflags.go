// Package cliflags parses command lines whose flags may come before or
// after their positional arguments, as people type them: `agentrunner
// sessions show t1 --app support` as well as `sessions show --app support
// t1`. The standard flag package stops at the first positional argument and
// leaves the flags after it unparsed, which the commands would then take for
// more arguments.
package cliflags

import "flag"

// Parse parses args with fs, taking flags wherever they appear among the
// positional arguments, and returns the positional arguments in order.
// "--" ends the flags: everything after it is positional, so an argument
// that starts with "-" can still be given. fs.Args() is not meaningful
// afterwards; use what Parse returns.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// flag.Parse stops either at "--", which it consumes, or at the
		// first argument that is not a flag, which it leaves first in rest.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
