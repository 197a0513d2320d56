package localcluster_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/promsum"
	"github.com/blockfs/blockfs/localcluster"
)

// cachingClient returns a client of c acting as user with its location
// cache on (client.Config.LocationCacheTTL ttl), closed when t ends.
func cachingClient(t *testing.T, c *localcluster.Cluster, user string, ttl time.Duration) *client.Client {
	t.Helper()
	cc, err := c.ClientConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	cc.LocationCacheTTL = ttl
	cl, err := client.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// readEqual reads p through cl both ways a caller does (Open and
// io.ReadAll, ReadFile) and fails unless each gives want.
func readEqual(t *testing.T, cl *client.Client, p string, want []byte) {
	t.Helper()
	ctx := ctxT(t)
	r, err := cl.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	_, err = got.ReadFrom(r)
	r.Close()
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %s: %d bytes that differ from the %d expected", p, got.Len(), len(want))
	}
	b, err := cl.ReadFile(ctx, p)
	if err != nil {
		t.Fatalf("ReadFile %s: %v", p, err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("ReadFile %s: %d bytes that differ from the %d expected", p, len(b), len(want))
	}
}

// readEqualLen reads p through cl and fails unless it has n bytes.
func readEqualLen(t *testing.T, cl *client.Client, p string, n int) {
	t.Helper()
	b, err := cl.ReadFile(ctxT(t), p)
	if err != nil || len(b) != n {
		t.Fatalf("ReadFile %s: %d bytes, %v; want %d", p, len(b), err, n)
	}
}

// verifyCounts sums the datanodes' verified-token cache misses and hits.
// signed sums blockfs_security_tokens_signed_total over the namenodes.
func signed(t *testing.T, c *localcluster.Cluster) float64 {
	t.Helper()
	var gs []prometheus.Gatherer
	for _, n := range c.Namenodes() {
		gs = append(gs, n.Registry())
	}
	return promsum.Sum(t, gs, "blockfs_security_tokens_signed_total", "kind", func(string) bool { return true })
}

func verifyCounts(t *testing.T, c *localcluster.Cluster) (misses, hits float64) {
	t.Helper()
	for _, d := range c.Datanodes() {
		mfs, err := d.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "blockfs_security_verify_cache_misses_total":
					misses += m.GetCounter().GetValue()
				case "blockfs_security_verify_cache_hits_total":
					hits += m.GetCounter().GetValue()
				}
			}
		}
	}
	return misses, hits
}

// waitGone waits until no datanode of c holds block id.
func waitGone(t *testing.T, c *localcluster.Cluster, id uint64) {
	t.Helper()
	ctx := ctxT(t)
	for {
		held := false
		for _, d := range c.Datanodes() {
			if _, ok := d.Store().Stat(id); ok {
				held = true
			}
		}
		if !held {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("block %d still on a datanode", id)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestLocationCache: with its location cache on, a client reads back the
// files it wrote and opened; every way a cached location goes stale
// (another client's append restamping the block, another client's
// overwrite once the old replicas are deleted, replicas deleted, this
// client's own overwrite or delete, the TTL passing) gives the current
// bytes or the current error, never the old ones; and a file read from
// the cache needs no namenode at all.
func TestLocationCache(t *testing.T) {
	ctx := ctxT(t)
	c, root := startWith(t, ctx, localcluster.Config{Namenodes: 3, Datanodes: 3, Dir: t.TempDir()})
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := root.Mkdirs(ctx, "/lc", 0o777, true); err != nil {
		t.Fatal(err)
	}
	if err := root.SetPermission(ctx, "/lc", 0o777); err != nil {
		t.Fatal(err)
	}
	a := cachingClient(t, c, "alice", time.Minute)
	b := cachingClient(t, c, "bob", 0) // another client: a changes a cannot see
	opts := client.CreateOptions{Replication: 3, BlockSize: blockSize, Perm: 0o666}
	write := func(cl *client.Client, p string, data []byte) {
		t.Helper()
		if err := cl.WriteFile(ctx, p, data, opts); err != nil {
			t.Fatal(err)
		}
	}
	blockOf := func(p string) uint64 {
		t.Helper()
		locs, err := root.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return locs.Blocks[0].Block.Id
	}

	t.Run("no new signature check", func(t *testing.T) {
		// The owner's Create token reads the block too: the read presents
		// a token the pipeline's datanodes verified, a cache hit.
		p, v := "/lc/hit", randBytes(600)
		write(a, p, v)
		misses, hits := verifyCounts(t, c)
		readEqual(t, a, p, v)
		m2, h2 := verifyCounts(t, c)
		if m2 != misses || h2 < hits+2 {
			t.Fatalf("verify cache misses %v -> %v, hits %v -> %v: want no miss, a hit per read", misses, m2, hits, h2)
		}
	})

	t.Run("PutFile signs no read token", func(t *testing.T) {
		// The write token PrepareFile signed reads the owner's file too:
		// PutFile hands it back with the locations rather than signing
		// another (the first PutFile prepares the next files' tokens).
		if err := a.PutFile(ctx, "/lc/put-0", randBytes(500), opts); err != nil {
			t.Fatal(err)
		}
		before := signed(t, c)
		v := randBytes(700)
		if err := a.PutFile(ctx, "/lc/put-1", v, opts); err != nil {
			t.Fatal(err)
		}
		if got := signed(t, c) - before; got != 0 {
			t.Fatalf("%v tokens signed for a PutFile of a prepared file: want none", got)
		}
		misses, _ := verifyCounts(t, c)
		readEqual(t, a, "/lc/put-1", v)
		if m2, _ := verifyCounts(t, c); m2 != misses {
			t.Fatalf("verify cache misses %v -> %v: the read presents the token the datanodes verified at the write", misses, m2)
		}
	})

	t.Run("append by another client", func(t *testing.T) {
		p, v1 := "/lc/append", randBytes(300)
		write(a, p, v1)
		readEqual(t, a, p, v1)
		w, err := b.Append(ctx, p) // reopens the last block: a new generation stamp
		if err != nil {
			t.Fatal(err)
		}
		more := randBytes(200)
		if _, err := w.Write(more); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		readEqual(t, a, p, append(v1, more...))
	})

	t.Run("overwrite by another client", func(t *testing.T) {
		p, v1, v2 := "/lc/over", randBytes(500), randBytes(700)
		write(a, p, v1)
		old := blockOf(p)
		readEqual(t, a, p, v1)
		over := opts
		over.Overwrite = true
		if err := b.WriteFile(ctx, p, v2, over); err != nil {
			t.Fatal(err)
		}
		waitGone(t, c, old)
		readEqual(t, a, p, v2)
	})

	t.Run("deleted by another client", func(t *testing.T) {
		p := "/lc/gone"
		write(a, p, randBytes(100))
		old := blockOf(p)
		if err := b.Delete(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		waitGone(t, c, old)
		if _, err := a.ReadFile(ctx, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("read of a deleted file: %v, want NotFound", err)
		}
	})

	t.Run("replicas deleted", func(t *testing.T) {
		p, v := "/lc/moved", randBytes(900)
		write(a, p, v)
		id := blockOf(p)
		// Two of the three replicas go (moved away, say): the third serves.
		for _, d := range c.Datanodes()[:2] {
			if err := d.Store().Delete(ctx, id); err != nil && !errs.Is(err, errs.NotFound) {
				t.Fatal(err)
			}
		}
		readEqual(t, a, p, v)
	})

	t.Run("own overwrite and delete", func(t *testing.T) {
		p, v1, v2 := "/lc/own", randBytes(400), randBytes(410)
		write(a, p, v1)
		readEqual(t, a, p, v1)
		over := opts
		over.Overwrite = true
		if err := a.WriteFile(ctx, p, v2, over); err != nil { // the old replicas are still on the datanodes
			t.Fatal(err)
		}
		readEqual(t, a, p, v2)
		if err := a.Delete(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Open(ctx, p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("open after own delete: %v, want NotFound", err)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		short := cachingClient(t, c, "carol", 200*time.Millisecond)
		p, v1, v2 := "/lc/ttl", randBytes(100), randBytes(120)
		write(short, p, v1)
		if err := b.Delete(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		write(b, p, v2)
		time.Sleep(300 * time.Millisecond) // past the TTL: the namenode is asked
		readEqual(t, short, p, v2)
	})

	t.Run("write only", func(t *testing.T) {
		// A writer that may not read its file gets no locations with its
		// Complete: its read asks the namenode, which refuses.
		p := "/lc/wo"
		wo := opts
		wo.Perm = 0o200
		write(a, p, randBytes(100))
		if err := a.SetPermission(ctx, p, 0o644); err != nil { // empties a's cache
			t.Fatal(err)
		}
		if err := a.WriteFile(ctx, p+"2", randBytes(100), wo); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ReadFile(ctx, p+"2"); !errs.Is(err, errs.Permission) {
			t.Fatalf("read of a write-only file: %v, want Permission", err)
		}
		readEqualLen(t, a, p, 100)
	})

	t.Run("no namenode needed", func(t *testing.T) {
		p, v := "/lc/nonn", randBytes(1000)
		write(a, p, v)
		pp, pv := "/lc/nonn-put", randBytes(900) // made in one Raft entry: PutFile
		if err := a.PutFile(ctx, pp, pv, opts); err != nil {
			t.Fatal(err)
		}
		for i := range c.Namenodes() {
			if err := c.StopNamenode(i); err != nil {
				t.Fatal(err)
			}
		}
		readEqual(t, a, p, v)
		readEqual(t, a, pp, pv)
		// An uncached client must ask a namenode, and there is none.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := b.ReadFile(short, p); err == nil {
			t.Fatal("an uncached read succeeded with every namenode down")
		}
	})
}

// TestLocationCacheNoReplica: a cached file whose datanodes are all gone
// fails its read (after asking the namenode once and retrying its
// replicas as an uncached read does) rather than retrying without end.
func TestLocationCacheNoReplica(t *testing.T) {
	ctx := ctxT(t)
	c, _ := startWith(t, ctx, localcluster.Config{Namenodes: 1, Datanodes: 1, Dir: t.TempDir()})
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	a := cachingClient(t, c, "root", time.Minute)
	if err := a.WriteFile(ctx, "/nr", randBytes(100), client.CreateOptions{Replication: 1, BlockSize: blockSize, Perm: 0o644}); err != nil {
		t.Fatal(err)
	}
	if err := c.StopDatanode(0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadFile(ctx, "/nr"); err == nil || ctx.Err() != nil {
		t.Fatalf("read with no datanode: %v (context %v), want an error before the deadline", err, ctx.Err())
	}
}
