package webhdfs_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/security"
)

// TestRedirectTokenOnceAtNamenode is issue 21's finding 6: the datanode a
// WebHDFS client was redirected to holds the redirect token, and a rogue
// one replays it straight at the namenode. A 1-byte OPEN's token gets the
// locations (and block tokens) of that byte's block only, never the whole
// file's, however often it is shown; a CREATE(overwrite) token creates
// the file once, and its replays are refused with the namespace unchanged.
func TestRedirectTokenOnceAtNamenode(t *testing.T) {
	e := startEnv(t, 1, false, "root")
	cl := e.client()
	ctx := ctxT(t)
	const bs = 1 << 20
	data := make([]byte, 3*bs)
	if err := cl.WriteFile(ctx, "/f", data, client.CreateOptions{BlockSize: bs}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, cl, "/f", 1)
	// redirect asks the namenode door for op's redirect and returns the
	// token and the id of the datanode it was issued for.
	redirect := func(method, op string, kv ...string) (tok, dn string) {
		t.Helper()
		st, h, b := e.do(method, e.url("/f", op, kv...), nil)
		if st != http.StatusTemporaryRedirect {
			t.Fatalf("%s: %d %s", op, st, b)
		}
		u, err := url.Parse(h.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range e.c.Datanodes() {
			if d := e.c.Datanode(i); d.HTTPAddr() == u.Host {
				return u.Query().Get("blockfs.token"), d.ID()
			}
		}
		t.Fatalf("no datanode serves %s", u.Host)
		return "", ""
	}
	conn, err := grpc.NewClient(e.c.NamenodeAddrs()[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	nn := api.NewClientServiceClient(conn)
	// as is the rogue datanode dn presenting tok, under simple auth.
	as := func(dn, tok string, call func(ctx context.Context) error) error {
		return call(metadata.AppendToOutgoingContext(ctx, security.UserKey, dn, security.RoleKey, "datanode", security.DelegationKey, tok))
	}

	tok, dn := redirect("GET", "OPEN", "offset", "5", "length", "1")
	for i := 0; i < 5; i++ {
		err := as(dn, tok, func(ctx context.Context) error {
			_, err := nn.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: "/f"})
			return err
		})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("replay %d for the whole file: %v, want PermissionDenied", i, err)
		}
	}
	var got *api.GetBlockLocationsResponse
	if err := as(dn, tok, func(ctx context.Context) (err error) {
		got, err = nn.GetBlockLocations(ctx, &api.GetBlockLocationsRequest{Path: "/f", Offset: 5, Length: 1})
		return err
	}); err != nil {
		t.Fatalf("the signed range: %v", err)
	}
	if n := len(got.BlockIds); n != 1 {
		t.Fatalf("the signed byte got %d blocks, want 1", n)
	}

	hash := e.c.Namenode(0).NamespaceHash()
	tok, dn = redirect("PUT", "CREATE", "overwrite", "true")
	// The namenode fixed the Create's parameters in the token; the rogue
	// reads them from its payload, as the datanode door does.
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Create security.CreateParams `json:"cr"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	cp := claims.Create
	create := &api.CreateRequest{Path: "/f", Overwrite: cp.Overwrite, CreateParent: cp.CreateParent, Mode: cp.Perm, Replication: cp.Replication, BlockSize: cp.BlockSize}
	for i := 0; i < 3; i++ {
		err := as(dn, tok, func(ctx context.Context) error {
			_, err := nn.Create(ctx, create)
			return err
		})
		switch {
		case i == 0 && status.Code(err) == codes.PermissionDenied && strings.Contains(err.Error(), "parameters"):
			t.Fatalf("the test's Create does not match the token's parameters: %v", err)
		case i == 0 && err != nil:
			t.Fatalf("first use: %v", err)
		case i == 0:
			hash = e.c.Namenode(0).NamespaceHash()
		case status.Code(err) != codes.PermissionDenied:
			t.Fatalf("replay %d: %v, want PermissionDenied", i, err)
		}
	}
	if e.c.Namenode(0).NamespaceHash() != hash {
		t.Fatal("a refused replay changed the namespace")
	}
}
