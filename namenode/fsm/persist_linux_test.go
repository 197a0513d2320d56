package fsm

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadNice is the calling thread's nice value.
func threadNice() (int, error) {
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	return 20 - raw, err // the raw syscall answers 20 - nice
}

// TestInBackgroundRunsNiced: fn runs on a thread at persistNice and its
// error comes back; the caller's thread keeps its priority.
func TestInBackgroundRunsNiced(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := threadNice()
	if err != nil {
		t.Fatal(err)
	}
	if before >= persistNice {
		t.Skipf("this test runs at nice %d already", before)
	}
	var inside int
	var insideErr error
	want := errors.New("from fn")
	err = inBackground(func() error {
		inside, insideErr = threadNice()
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("inBackground returned %v, want fn's error", err)
	}
	if insideErr != nil || inside != persistNice {
		t.Errorf("fn ran at nice %d (%v), want %d", inside, insideErr, persistNice)
	}
	if after, _ := threadNice(); after != before {
		t.Errorf("the caller's thread went from nice %d to %d", before, after)
	}
}
