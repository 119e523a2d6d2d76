// Package faults names the points where fault tests stop a process: between
// capturing a charge and committing it, after a commit and before the answer,
// during a callback's delivery. Production code calls Point at each; only a
// test binary installs a hook (it kills its own process at the point it was
// told), so in the platform every Point is a no-op.
package faults

import "sync/atomic"

var hook atomic.Pointer[func(point string)]

// Point marks a named place in the code.
func Point(name string) {
	if h := hook.Load(); h != nil {
		(*h)(name)
	}
}

// SetHook installs the function every Point calls (tests only).
func SetHook(f func(point string)) { hook.Store(&f) }
