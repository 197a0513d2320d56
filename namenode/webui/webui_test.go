package webui_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/security"
)

// xssName is a file name made of HTML: every page must show it as text.
const xssName = `<img src=x onerror=alert(1)>"&'`

// uiCluster starts namenodes namenodes and datanodes datanodes (simple auth
// unless mtls) and writes, as root:
//
//	/data        root 0755
//	/data/logs   root 0755, empty
//	/data/f      root 0644, 6000 bytes in two 4 KiB blocks, two replicas each
//	/data/<xss>  root 0644, empty
//	/secret      root 0700
//
// It returns once every block of /data/f has its replicas reported (one
// with a single datanode).
func uiCluster(t *testing.T, namenodes, datanodes int, mtls bool) *localcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: namenodes, Datanodes: datanodes, Dir: t.TempDir(), MTLS: mtls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, d := range []struct {
		p    string
		perm uint32
	}{{"/data/logs", 0o755}, {"/secret", 0o700}} {
		if err := cl.Mkdirs(ctx, d.p, d.perm, true); err != nil {
			t.Fatal(err)
		}
	}
	data := make([]byte, 6000)
	for i := range data {
		data[i] = byte(i)
	}
	repl := min(2, datanodes)
	opts := client.CreateOptions{Perm: 0o644, Replication: uint32(repl), BlockSize: 4096}
	if err := cl.WriteFile(ctx, "/data/f", data, opts); err != nil {
		t.Fatal(err)
	}
	if err := cl.WriteFile(ctx, "/data/"+xssName, nil, opts); err != nil {
		t.Fatal(err)
	}
	for {
		locs, err := cl.GetBlockLocations(ctx, "/data/f", 0, 0)
		if err == nil && len(locs.Blocks) == 2 && len(locs.Blocks[0].Locations) == repl && len(locs.Blocks[1].Locations) == repl {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("replicas of /data/f never reported: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// get fetches u with hc and returns the status and body.
func get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestWebUISimple: the UI's pages under simple auth, as users with and
// without permission, and as the static web user (dr.who, HDFS's) for a
// browser that names none, on the leader and on a follower; every value
// is escaped.
func TestWebUISimple(t *testing.T) {
	c := uiCluster(t, 3, 2, false)
	leader := c.Leader()
	follower := (leader + 1) % 3
	lead, fol := c.Namenode(leader), c.Namenode(follower)
	base := "http://" + lead.HTTPAddr()
	as := func(user string) string { return "?" + url.Values{security.HTTPUserParam: {user}}.Encode() }
	dn0, dn1 := c.DatanodeID(0), c.DatanodeID(1)
	cases := []struct {
		name     string
		url      string
		status   int
		want     []string
		dontWant []string
	}{
		{"overview as the static web user", base + "/", 200, []string{"Overview", lead.ID(), "user/dr.who"}, nil},
		{"overview", base + "/" + as("alice"), 200, []string{"Overview", lead.ID(), "leader", "user/alice", "cached", `id="missing">0<`}, []string{"follower-banner"}},
		{"namenodes", base + "/namenodes" + as("alice"), 200, []string{"nn1", "nn2", "nn3", "voter", "(this node)", "follower"}, []string{"unreachable"}},
		{"datanodes", base + "/datanodes" + as("alice"), 200, []string{dn0, dn1, "Live (2)", "Dead (0)"}, nil},
		{"one datanode", base + "/datanodes/" + url.PathEscape(dn0) + as("alice"), 200, []string{dn0, "/metrics", `id="dn-state">live`}, nil},
		{"unknown datanode", base + "/datanodes/nope" + as("alice"), 404, []string{"nope"}, nil},
		{"root listing", base + "/browse/" + as("alice"), 200, []string{"data/", "secret/", "drwx------"}, nil},
		{"directory", base + "/browse/data" + as("alice"), 200, []string{"logs/", ">f<", "5.8 KiB", "&lt;img src=x onerror=alert(1)&gt;&#34;&amp;&#39;"}, []string{"<img src=x"}},
		{"file blocks", base + "/browse/data/f" + as("alice"), 200, []string{"Blocks (2)", dn0, dn1, "/datanodes/"}, nil},
		{"empty directory", base + "/browse/data/logs" + as("alice"), 200, []string{"empty directory"}, nil},
		{"no permission", base + "/browse/secret" + as("alice"), 403, []string{"403 Forbidden", "user=alice"}, nil},
		{"superuser may", base + "/browse/secret" + as("root"), 200, []string{"empty directory"}, nil},
		{"missing path", base + "/browse/nowhere" + as("alice"), 404, []string{"no such file"}, nil},
		{"browse as the static web user", base + "/browse/data", 200, []string{"logs/", ">f<"}, nil},
		{"the static web user has its own permissions only", base + "/browse/secret", 403, []string{"403 Forbidden", "user=dr.who"}, nil},
		{"the static web user's links stay anonymous", base + "/browse/", 200, []string{"data/", "secret/", `href="/browse/data"`}, []string{"user.name=dr.who"}},
		{"a named user's links carry the name", base + "/browse/" + as("alice"), 200, []string{`href="/browse/data?user.name=alice"`}, nil},
		{"stylesheet is public", base + "/static/style.css", 200, []string{"font"}, nil},
		{"templates are not served", base + "/static/layout.html", 404, nil, nil},
		{"metrics are public", base + "/metrics", 200, []string{"blockfs_namenode_files"}, nil},
		{"follower says so", "http://" + fol.HTTPAddr() + "/" + as("alice"), 200, []string{"follower-banner", "go to the leader", lead.HTTPAddr()}, nil},
		{"follower browses as of the leader", "http://" + fol.HTTPAddr() + "/browse/data/f" + as("alice"), 200, []string{"Blocks (2)"}, nil},
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, hc, tc.url)
			if status != tc.status {
				t.Fatalf("status %d, want %d:\n%s", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(body, w) {
					t.Errorf("page has %q:\n%s", w, body)
				}
			}
		})
	}
}

// TestWebUIMTLS: under mTLS the HTTP port serves TLS; /metrics and
// /healthz need no client certificate, the pages need one, and browse runs
// as the certificate's user.
func TestWebUIMTLS(t *testing.T) {
	c := uiCluster(t, 1, 1, true)
	base := "https://" + c.Namenode(0).HTTPAddr()
	anon, err := security.ClientTLSConfig(c.CA().CertPEM, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := c.TLSFor(security.Identity{Role: security.RoleUser, Name: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	dn, err := c.TLSFor(security.Identity{Role: security.RoleDatanode, Name: c.DatanodeID(0)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		tls    *tls.Config
		path   string
		status int
		want   string
	}{
		{"metrics without a certificate", anon, "/metrics", 200, "blockfs_namenode_files"},
		{"healthz without a certificate", anon, "/healthz", 200, "ok"},
		{"overview without a certificate", anon, "/", 401, "client certificate"},
		{"no static web user under mTLS", anon, "/browse/data", 401, "client certificate"},
		{"overview as alice", alice, "/", 200, "user/alice"},
		{"user.name is ignored under mTLS", alice, "/browse/secret?user.name=root", 403, "user=alice"},
		{"browse as alice", alice, "/browse/data", 200, "logs/"},
		{"a datanode sees the cluster", dn, "/datanodes", 200, "Live (1)"},
		{"a datanode may not browse", dn, "/browse/", 403, "needs role user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: tc.tls}
			defer tr.CloseIdleConnections()
			status, body := get(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, base+tc.path)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d (want %d), body lacks %q?\n%s", status, tc.status, tc.want, body)
			}
		})
	}
}
