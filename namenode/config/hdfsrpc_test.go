package config

import (
	"strings"
	"testing"
)

// TestHDFSRPCLoopbackOnly: the HDFS door, whose simple authentication
// believes any user a client names, binds loopback only unless Insecure.
func TestHDFSRPCLoopbackOnly(t *testing.T) {
	cases := []struct {
		addr     string
		insecure bool
		refused  bool
	}{
		{"", false, false},
		{"127.0.0.1:0", false, false},
		{"[::1]:8020", false, false},
		{"localhost:8020", false, false},
		{"0.0.0.0:8020", false, true},
		{":8020", false, true},
		{"10.1.2.3:8020", false, true},
		{"10.1.2.3:8020", true, false},
		{"not an address", false, true},
	}
	for _, c := range cases {
		err := HDFSRPC{Addr: c.addr, Insecure: c.insecure}.Validate()
		if (err != nil) != c.refused {
			t.Errorf("%q insecure=%v: %v, refused want %v", c.addr, c.insecure, err, c.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--hdfs-rpc-insecure") {
			t.Errorf("%q: the refusal does not name the flag: %v", c.addr, err)
		}
	}
}
