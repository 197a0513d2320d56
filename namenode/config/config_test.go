package config

import (
	"strings"
	"testing"
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
