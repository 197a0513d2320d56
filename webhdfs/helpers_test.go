package webhdfs_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/localcluster"
	"github.com/blockfs/blockfs/namenode"
	"github.com/blockfs/blockfs/security"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// env is an in-process cluster with a WebHDFS HTTP client for one user.
type env struct {
	t    *testing.T
	c    *localcluster.Cluster
	mtls bool
	nn   string // namenode HTTP base, scheme://host:port
	user string
	hc   *http.Client // does not follow redirects
	tr   *http.Transport
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startEnv starts namenodes namenodes and 3 datanodes (simple auth, or
// mTLS with certificates for user) and waits until WebHDFS can serve data.
func startEnv(t *testing.T, namenodes int, mtls bool, user string) *env {
	t.Helper()
	return startEnvWith(t, namenodes, mtls, user, nil)
}

// startEnvWith is startEnv with each namenode's config adjusted by nn.
func startEnvWith(t *testing.T, namenodes int, mtls bool, user string, nn func(int, *namenode.Config)) *env {
	t.Helper()
	ctx := ctxT(t)
	c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: namenodes, Datanodes: 3, Dir: t.TempDir(), MTLS: mtls, Namenode: nn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitDatanodes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitTokens(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, mtls: mtls, user: user}
	e.tr = &http.Transport{}
	scheme := "http"
	if mtls {
		scheme = "https"
		e.tr.TLSClientConfig = e.tlsFor(user)
	}
	t.Cleanup(e.tr.CloseIdleConnections)
	e.hc = &http.Client{Transport: e.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	e.nn = scheme + "://" + c.Namenode(max(c.Leader(), 0)).HTTPAddr()
	return e
}

// tlsFor is a client TLS config presenting a user certificate of the
// cluster's CA.
func (e *env) tlsFor(user string) *tls.Config {
	cfg, err := e.c.TLSFor(security.Identity{Role: security.RoleUser, Name: user})
	if err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

// client is a Go client as e's user.
func (e *env) client() *client.Client {
	cl, err := e.c.ClientAs(e.user)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cl.Close() })
	return cl
}

// url builds the namenode URL of op on p with more query parameters.
func (e *env) url(p, op string, kv ...string) string {
	q := url.Values{"op": {op}}
	if !e.mtls {
		q.Set("user.name", e.user)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return e.nn + "/webhdfs/v1" + p + "?" + q.Encode()
}

// do sends one request and returns its status, headers and body.
func (e *env) do(method, u string, body io.Reader) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// remote decodes a RemoteException body; ok is false when b is not one.
func remote(b []byte) (exception string, ok bool) {
	var r struct {
		RemoteException struct {
			Exception     string `json:"exception"`
			JavaClassName string `json:"javaClassName"`
			Message       string `json:"message"`
		}
	}
	if json.Unmarshal(b, &r) != nil || r.RemoteException.Exception == "" || r.RemoteException.JavaClassName == "" || r.RemoteException.Message == "" {
		return "", false
	}
	return r.RemoteException.Exception, true
}

// put writes data through both steps of CREATE and returns the final status.
func (e *env) put(p string, data []byte, kv ...string) (int, []byte) {
	e.t.Helper()
	st, h, b := e.do(http.MethodPut, e.url(p, "CREATE", kv...), nil)
	if st != http.StatusTemporaryRedirect {
		return st, b
	}
	st, _, b = e.do(http.MethodPut, h.Get("Location"), strings.NewReader(string(data)))
	return st, b
}

// get reads through both steps of OPEN.
func (e *env) get(p string, kv ...string) (int, []byte) {
	e.t.Helper()
	st, h, b := e.do(http.MethodGet, e.url(p, "OPEN", kv...), nil)
	if st != http.StatusTemporaryRedirect {
		return st, b
	}
	st, _, b = e.do(http.MethodGet, h.Get("Location"), nil)
	return st, b
}

// writePEM writes the CA certificate and e's user certificate and key as
// PEM files (for curl and python) and returns their paths.
func (e *env) writePEM(dir string) (ca, cert, key string) {
	e.t.Helper()
	certPEM, keyPEM, err := security.IssueCert(e.c.CA(), security.DefaultTrustDomain, security.Identity{Role: security.RoleUser, Name: e.user}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "user.pem"), filepath.Join(dir, "user.key")
	for f, b := range map[string][]byte{ca: e.c.CA().CertPEM, cert: certPEM, key: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			e.t.Fatal(err)
		}
	}
	return ca, cert, key
}

// waitReplicas waits until every block of p has n reported replicas.
func waitReplicas(t *testing.T, cl *client.Client, p string, n int) {
	t.Helper()
	ctx := ctxT(t)
	for {
		r, err := cl.GetBlockLocations(ctx, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		for _, c := range r.ReplicaCounts {
			ok = ok && int(c) >= n
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: replicas not reported", p)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
