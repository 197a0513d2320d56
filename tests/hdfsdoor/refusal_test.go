package hdfsdoor

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	hdfs "github.com/colinmarc/hdfs/v2"

	"github.com/blockfs/blockfs/api"
)

// TestDoorRefusals: each refusal of the HDFS door's one policy table and
// of its standing checks, with the exception an HDFS client sees, and that
// the refused call changed nothing.
func TestDoorRefusals(t *testing.T) {
	checkLeaks(t)
	c := startCluster(t, 0)
	root := hdfsClient(t, c, "root")
	if err := root.MkdirAll("/r", 0o777); err != nil {
		t.Fatal(err)
	}
	admin, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.Revoke(ctx, &api.RevokedEntry{Role: "user", Name: "mallory", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	leader := c.Leader()
	var follower string
	for i, a := range c.HDFSRPCAddrs() {
		if i != leader {
			follower = a
		}
	}
	cases := []struct {
		name  string
		addrs []string
		user  string
		class string // the exception's class, in the client's error
	}{
		// A name the policy cannot hold (no identity): refused before any rule.
		{"invalid user name", c.HDFSRPCAddrs(), "a/b", "SecurityException"},
		// The replicated deny list reaches the door as every door.
		{"revoked user", c.HDFSRPCAddrs(), "mallory", "SecurityException"},
		// A write sent only to a follower: StandbyException, so that a
		// client fails over (here it has nowhere to go).
		{"write on a follower", []string{follower}, "root", "StandbyException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: tc.addrs, User: tc.user})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			err = cl.Mkdir("/r/"+strings.ReplaceAll(tc.name, " ", "-"), 0o755)
			if err == nil || !strings.Contains(remote(err).Error(), tc.class) {
				t.Fatalf("mkdir as %q: %v, want %s", tc.user, remote(err), tc.class)
			}
			if _, err := root.Stat("/r/" + strings.ReplaceAll(tc.name, " ", "-")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the refused mkdir left %v", err)
			}
		})
	}
	// Reads on a follower are served (after its read barrier).
	cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{follower}, User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Stat("/r"); err != nil {
		t.Fatalf("a read on a follower: %v", err)
	}
}
