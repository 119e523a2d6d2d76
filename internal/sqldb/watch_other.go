//go:build !linux

package sqldb

import "context"

// watchFile: only Linux's inotify is used; elsewhere Watch polls.
func watchFile(context.Context, string, func() (bool, error)) error { return errNoFileWatch }
