package webui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/security"
)

// TestWebUIBrowseReadBarrier: browse pages read through the client
// service's read barrier and permission checks, on a real cluster. A
// follower's browse page shows a directory the leader acknowledged just
// before (the read is linearizable, not the follower's possibly lagging
// state), and a file its viewer may not read shows its status but not its
// blocks: GetBlockLocations' own check refuses it.
func TestWebUIBrowseReadBarrier(t *testing.T) {
	c := uiCluster(t, 3, 1, false)
	fol := c.Namenode((c.Leader() + 1) % 3)
	as := func(user string) string { return "?" + url.Values{security.HTTPUserParam: {user}}.Encode() }
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hc := &http.Client{Timeout: 10 * time.Second}

	for i := range 20 {
		p := fmt.Sprintf("/fresh/d%d", i)
		if err := cl.Mkdirs(ctx, p, 0o755, true); err != nil {
			t.Fatal(err)
		}
		status, body := get(t, hc, "http://"+fol.HTTPAddr()+"/browse"+p+as("alice"))
		if status != http.StatusOK || !strings.Contains(body, "empty directory") {
			t.Fatalf("follower's browse of %s just after the leader made it: status %d\n%s", p, status, body)
		}
	}

	if err := cl.WriteFile(ctx, "/data/private", []byte("x"), client.CreateOptions{Perm: 0o600, Replication: 1}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		user   string
		status int
		want   string
	}{
		{"alice", http.StatusForbidden, "user=alice"},
		{"root", http.StatusOK, "Blocks (1)"},
	}
	for _, tc := range cases {
		t.Run("file as "+tc.user, func(t *testing.T) {
			status, body := get(t, hc, "http://"+fol.HTTPAddr()+"/browse/data/private"+as(tc.user))
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d (want %d), body lacks %q?\n%s", status, tc.status, tc.want, body)
			}
		})
	}
}
