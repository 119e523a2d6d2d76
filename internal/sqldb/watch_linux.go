package sqldb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// watchFile calls written once watching, then whenever the file at path is
// written, created or replaced, until ctx ends or written fails; through
// inotify, so nothing runs between writes. SQLite deletes a store's
// write-ahead log when its last connection closes and makes a new one at the
// next: the directory is watched for the file's creation, the file for its
// writes.
//
// A commit writes its pages to the log, then publishes them in shared memory,
// which no file event tells of: written, run on the writes, may come just
// before a commit shows. When it reports no change, it runs again after each
// of settle's pauses, until it does or new writes come.
func watchFile(ctx context.Context, path string, written func() (changed bool, err error)) error {
	err := watchInotify(ctx, path, written)
	if ctx.Err() != nil { // the file closed under a read or a re-check
		return ctx.Err()
	}
	return err
}

func watchInotify(ctx context.Context, path string, written func() (changed bool, err error)) error {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("%w: %w", errNoFileWatch, err)
	}
	// Non-blocking, the descriptor is read through the runtime's poller: a
	// read waits without a thread, and closing the file ends it.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()

	dir, name := filepath.Split(path)
	if _, err := syscall.InotifyAddWatch(fd, filepath.Clean(dir), syscall.IN_CREATE|syscall.IN_MOVED_TO); err != nil {
		return fmt.Errorf("%w: watch %s: %w", errNoFileWatch, dir, err)
	}
	fileWatch := int32(-1)
	watchTheFile := func() error {
		wd, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY)
		switch {
		case err == nil:
			fileWatch = int32(wd)
		case errors.Is(err, syscall.ENOENT): // not yet made: its creation is watched
		default: // out of watches, say: Watch polls instead
			return fmt.Errorf("%w: watch %s: %w", errNoFileWatch, name, err)
		}
		return nil
	}
	if err := watchTheFile(); err != nil {
		return err
	}
	if _, err := written(); err != nil {
		return err
	}
	rechecks := len(settle) // none due
	check := func() error {
		changed, err := written()
		switch {
		case err != nil:
			return err
		case changed || rechecks == len(settle):
			rechecks = len(settle)
			return f.SetReadDeadline(time.Time{})
		default:
			rechecks++
			return f.SetReadDeadline(time.Now().Add(settle[rechecks-1]))
		}
	}

	buf := make([]byte, 64*(syscall.SizeofInotifyEvent+syscall.NAME_MAX+1))
	for {
		n, err := f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) { // a re-check is due
			if err := check(); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", name, err)
		}
		tell := false
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			// A name is padded with NULs.
			evName := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:min(n, off+syscall.SizeofInotifyEvent+size)], "\x00"))
			off += syscall.SizeofInotifyEvent + size
			switch {
			case mask&syscall.IN_Q_OVERFLOW != 0: // events were lost: anything may have changed
				tell = true
			case wd == fileWatch && mask&syscall.IN_IGNORED != 0: // the file is gone
				fileWatch = -1
			case wd == fileWatch:
				tell = true
			case evName == name: // made anew
				if err := watchTheFile(); err != nil {
					return err
				}
				tell = true
			}
		}
		// One call for all the events read together: a large write is
		// thousands of them.
		if tell {
			rechecks = 0
			if err := check(); err != nil {
				return err
			}
		}
	}
}

// settle: the pauses before written runs again when, run on a file's
// writes, it found no change yet. A commit shows microseconds after its last
// write; the longer pauses are for a writer held up on a busy machine, and
// follow's backstop poll for anything slower.
var settle = []time.Duration{2 * time.Millisecond, 20 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second}
