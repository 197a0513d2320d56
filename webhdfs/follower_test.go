package webhdfs_test

import (
	"bytes"
	"net/http"
	"testing"
)

// TestFollowerNamenode: WebHDFS on a follower works as on the leader: a
// write is forwarded, and a redirect token the follower signed is taken by
// the leader, where the datanode's delegated Create and AddBlock go.
func TestFollowerNamenode(t *testing.T) {
	e := startEnv(t, 3, true, "root")
	leader := e.c.Leader()
	follower := (leader + 1) % 3
	e.nn = "https://" + e.c.Namenode(follower).HTTPAddr()
	if st, _, b := e.do("PUT", e.url("/f/dir", "MKDIRS"), nil); st != 200 {
		t.Fatalf("MKDIRS on a follower: %d %s", st, b)
	}
	data := pattern(300 << 10)
	if st, b := e.put("/f/dir/x", data, "blocksize", "65536"); st != http.StatusCreated {
		t.Fatalf("CREATE through a follower: %d %s", st, b)
	}
	waitReplicas(t, e.client(), "/f/dir/x", 1)
	if st, b := e.get("/f/dir/x", "offset", "1000"); st != 200 || !bytes.Equal(b, data[1000:]) {
		t.Fatalf("OPEN through a follower: %d, %d bytes", st, len(b))
	}
}
