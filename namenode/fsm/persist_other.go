//go:build !linux

package fsm

import "os"

// writeBack does nothing where sync_file_range does not exist: the
// snapshot store's final fsync writes the whole file.
func writeBack(*os.File, int64, int64) error { return nil }

// inBackground runs fn.
func inBackground(fn func() error) error { return fn() }
