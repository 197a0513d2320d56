package config

import (
	"strings"
	"testing"
	"time"
)

// TestNamespaceXAttrLimits: HDFS's defaults validate; out-of-range limits
// are refused, naming the limit.
func TestNamespaceXAttrLimits(t *testing.T) {
	for _, c := range []struct {
		count, size int
		bad         string
	}{
		{32, 16384, ""},
		{128, 32768, ""},
		{0, 16384, "max xattrs per inode"},
		{129, 16384, "max xattrs per inode"},
		{32, 0, "max xattr size"},
		{32, 32769, "max xattr size"},
	} {
		n := DefaultNamespace()
		n.MaxXAttrsPerInode, n.MaxXAttrSize = c.count, c.size
		err := n.Validate()
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%d, %d: %v, want %q", c.count, c.size, err, c.bad)
		}
	}
}

// TestFairLimits: the fair scheduler's defaults validate, off needs
// nothing else, and a negative load or a half-life shorter than a window
// is refused, naming the scheduler.
func TestFairLimits(t *testing.T) {
	for _, c := range []struct {
		busy, halfLife time.Duration
		bad            string
	}{
		{DefaultLimits().Fair.Busy, DefaultLimits().Fair.HalfLife, ""},
		{0, 0, ""},
		{-time.Microsecond, time.Second, "fair scheduler"},
		{time.Millisecond, time.Millisecond, "fair scheduler"},
	} {
		l := DefaultLimits()
		l.Fair.Busy, l.Fair.HalfLife = c.busy, c.halfLife
		err := l.Validate()
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("busy %v, half-life %v: %v, want %q", c.busy, c.halfLife, err, c.bad)
		}
	}
}
