package webhdfs_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/namenode"
)

// cutBody yields n bytes, then fails: an upload cut off midway.
type cutBody struct{ n int }

func (c *cutBody) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, errors.New("upload cut off")
	}
	k := min(len(p), c.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	c.n -= k
	return k, nil
}

// TestCutCreateTakenOver: a WebHDFS CREATE whose upload is cut off
// leaves a file under construction; a CREATE with overwrite=true is
// refused with AlreadyBeingCreatedException while the cut writer's soft
// limit runs; after it the namenode starts the lease's recovery itself,
// as HDFS's create does, tells the client to try again while it runs,
// and a retry then succeeds: WebHDFS cannot call recoverLease.
func TestCutCreateTakenOver(t *testing.T) {
	const soft = 500 * time.Millisecond
	for _, mtls := range []bool{false, true} {
		name := map[bool]string{false: "simple", true: "mtls"}[mtls]
		t.Run(name, func(t *testing.T) {
			e := startEnvWith(t, 1, mtls, "alice", func(_ int, c *namenode.Config) {
				c.Leases.SoftLimit, c.Leases.HardLimit = soft, time.Hour // the leader's own recovery stays out of it
			})
			root := e.c
			adm, err := root.ClientAs("root")
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			if err := adm.Mkdirs(ctxT(t), "/w", 0o777, true); err != nil {
				t.Fatal(err)
			}
			// The cut-off upload. The lease's stamps are all after start,
			// so the soft limit has not passed while time.Since(start) < soft.
			start := time.Now()
			st, h, b := e.do(http.MethodPut, e.url("/w/f", "CREATE"), nil)
			if st != http.StatusTemporaryRedirect {
				t.Fatalf("step 1: %d %s", st, b)
			}
			req, err := http.NewRequest(http.MethodPut, h.Get("Location"), &cutBody{n: 100})
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := e.hc.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				t.Fatalf("a cut-off upload answered %d", resp.StatusCode)
			}
			cl := e.client()
			ctx := ctxT(t)
			for {
				fi, err := cl.Stat(ctx, "/w/f")
				if err == nil && fi.UnderConstruction {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the cut-off create left no file under construction: %v %v", fi, err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			retry := func() (int, []byte) { return e.put("/w/f", []byte("hello"), "overwrite", "true") }
			// Within the soft limit: the lease is the cut writer's. (Under
			// mTLS a datanode's door writes through one shared client, so
			// a retry the namenode sends to the cut write's datanode is
			// the same lease holder, and overwrites at once.)
			st, b = retry()
			if time.Since(start) < soft && !(mtls && st == http.StatusCreated) {
				if ex, _ := remote(b); st != http.StatusForbidden || ex != "AlreadyBeingCreatedException" {
					t.Fatalf("retry within the soft limit: %d %s, want 403 AlreadyBeingCreatedException", st, b)
				}
			}
			// Past it, a create starts the lease's recovery itself: it is
			// told to try again while the recovery runs (the cut writer's
			// pipeline may hold bytes), and succeeds once the recovery
			// closed the file. Without the takeover every retry would be
			// AlreadyBeingCreated until the hard limit (an hour here).
			attempts := 0
			for st != http.StatusCreated {
				select {
				case <-ctx.Done():
					t.Fatalf("no create succeeded after the soft limit in %d attempts: %s", attempts, b)
				case <-time.After(50 * time.Millisecond):
				}
				st, b = retry()
				attempts++
				if st == http.StatusCreated {
					break
				}
				ex, _ := remote(b)
				if st != http.StatusForbidden || (ex != "AlreadyBeingCreatedException" && ex != "RecoveryInProgressException") {
					t.Fatalf("create %d: %d %s, want 201, or 403 AlreadyBeingCreatedException or RecoveryInProgressException", attempts, st, b)
				}
				if ex == "RecoveryInProgressException" && !strings.Contains(string(b), "Try again later") {
					t.Fatalf("create %d: %s", attempts, b)
				}
			}
			if st, b := e.get("/w/f"); st != http.StatusOK || string(b) != "hello" {
				t.Fatalf("read back: %d %q", st, b)
			}
			if fi, err := cl.Stat(ctx, "/w/f"); err != nil || fi.UnderConstruction || !strings.HasSuffix(fi.Path, "/w/f") {
				t.Fatalf("after the takeover: %v %v", fi, err)
			}
		})
	}
}
