package security

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/metadata"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

var testCreate = CreateParams{Overwrite: true, CreateParent: true, Perm: 0o640, Replication: 2, BlockSize: 1 << 20}

func redirectFor(t *testing.T, e *env, r Redirect) []byte {
	t.Helper()
	tok, _, err := e.is.RedirectToken(r)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestRedirectTokenRoundTrip: what the namenode signs is what a verifier
// reads back, for both ops.
func TestRedirectTokenRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	v := NewRedirectVerifier(e.cfg, e.ks)
	for _, in := range []Redirect{
		{User: "alice", Op: RedirectCreate, Path: "/a/f", Datanode: "dn1", Create: testCreate},
		{User: "bob", Op: RedirectOpen, Path: "/b", Datanode: "dn2", Inode: 7, Offset: 5, Length: 9, HasLength: true},
		{User: "bob", Op: RedirectOpen, Path: "/b", Datanode: "dn2", Inode: 7},
		{User: "carol", Op: RedirectAppend, Path: "/c", Datanode: "dn3", Inode: 9},
	} {
		tok, signed, err := e.is.RedirectToken(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		if got != signed || got.Nonce == "" || got.ExpiresAt.Sub(got.IssuedAt) != RedirectLifetime {
			t.Fatalf("verified %+v, signed %+v", got, signed)
		}
	}
}

// TestRedirectTokenRefusals: every way a redirect token can be wrong is an
// Unauthenticated refusal, and block tokens and redirect tokens are never
// taken for one another.
func TestRedirectTokenRefusals(t *testing.T) {
	e := newEnv(t, nil)
	v := NewRedirectVerifier(e.cfg, e.ks)
	good := redirectFor(t, e, Redirect{User: "alice", Op: RedirectOpen, Path: "/f", Datanode: "dn1", Inode: 3})
	hdr, payload, sig := splitJWT(t, good)
	tamper := func(k string, val any) []byte {
		p := map[string]any{}
		for k, v := range payload {
			p[k] = v
		}
		p[k] = val
		return joinJWT(t, hdr, p, sig)
	}
	kp := e.km.Current()
	signed := func(mod func(p jwt.MapClaims)) []byte {
		p := jwt.MapClaims{}
		for k, v := range payload {
			p[k] = v
		}
		mod(p)
		return signMap(t, kp, p)
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims(payload))
	hs.Header["kid"] = kp.KID
	hsTok, _ := hs.SignedString([]byte(kp.Public))
	noneTok, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims(payload)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	blockTok := must(t)(e.is.BlockToken("alice", 3, 1, 1, Read))
	other := newEnv(t, nil) // another cluster's keys

	cases := []struct {
		name   string
		tok    []byte
		reason string
	}{
		{"empty", nil, "missing token"},
		{"path changed", tamper("pth", "/g"), "bad signature"},
		{"op changed", tamper("op", "CREATE"), "bad signature"},
		{"user changed", tamper("sub", "root"), "bad signature"},
		{"datanode changed", tamper("dn", "dn2"), "bad signature"},
		{"alg HS256", []byte(hsTok), "bad signature"},
		{"alg none", []byte(noneTok), "bad signature"},
		{"unknown key", redirectFor(t, other, Redirect{User: "alice", Op: RedirectOpen, Path: "/f", Datanode: "dn1", Inode: 3}), "unknown key"},
		{"block token", blockTok, "not a redirect token"},
		{"kind missing", signed(func(p jwt.MapClaims) { delete(p, "knd") }), "not a redirect token"},
		{"nonce missing", signed(func(p jwt.MapClaims) { delete(p, "jti") }), "not a redirect token"},
		{"open without inode", signed(func(p jwt.MapClaims) { delete(p, "ino") }), "do not fit"},
		{"unknown op", signed(func(p jwt.MapClaims) { p["op"] = "TRUNCATE" }), "do not fit"},
		{"append with a range", signed(func(p jwt.MapClaims) { p["op"] = "APPEND"; p["len"] = 5 }), "do not fit"},
		{"append without inode", signed(func(p jwt.MapClaims) { p["op"] = "APPEND"; delete(p, "ino") }), "do not fit"},
		{"long lifetime", signed(func(p jwt.MapClaims) { p["exp"] = epoch.Add(time.Hour).Unix() }), "lifetime"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.Verify(c.tok)
			wantErr(t, err, errs.Unauthenticated, c.reason)
		})
	}
	t.Run("expired", func(t *testing.T) {
		e.clock.Add(RedirectLifetime + e.cfg.ClockSkew)
		defer e.clock.Add(-(RedirectLifetime + e.cfg.ClockSkew))
		_, err := v.Verify(good)
		wantErr(t, err, errs.Unauthenticated, "expired")
	})
	t.Run("as a block token", func(t *testing.T) {
		_, err := e.v.Verify(good, Request{Inode: 3, Access: Read})
		wantErr(t, err, errs.Unauthenticated, "malformed claims")
	})
}

// TestRedirectCheck: a valid token covers only its datanode, op and path.
func TestRedirectCheck(t *testing.T) {
	r := Redirect{User: "alice", Op: RedirectCreate, Path: "/f", Datanode: "dn1"}
	cases := []struct{ dn, op, path, reason string }{
		{"dn1", RedirectCreate, "/f", ""},
		{"dn2", RedirectCreate, "/f", "datanode"},
		{"dn1", RedirectOpen, "/f", "op"},
		{"dn1", RedirectCreate, "/g", "another path"},
	}
	for _, c := range cases {
		err := r.Check(c.dn, c.op, c.path)
		if c.reason == "" {
			if err != nil {
				t.Errorf("%+v: %v", c, err)
			}
			continue
		}
		wantErr(t, err, errs.Permission, c.reason)
	}
}

// TestAuthorizeDelegated: a datanode presenting a redirect token runs the
// calls of that op on that path as the token's user, and nothing else.
func TestAuthorizeDelegated(t *testing.T) {
	e := newEnv(t, nil)
	a := NewAuthorizer(AuthConfig{Simple: true, Redirects: NewRedirectVerifier(e.cfg, e.ks)})
	create := redirectFor(t, e, Redirect{User: "alice", Op: RedirectCreate, Path: "/f", Datanode: "dn1", Create: testCreate})
	open := redirectFor(t, e, Redirect{User: "bob", Op: RedirectOpen, Path: "/f", Datanode: "dn1", Inode: 4})
	appendTok := redirectFor(t, e, Redirect{User: "carol", Op: RedirectAppend, Path: "/f", Datanode: "dn1", Inode: 4})
	ranged := redirectFor(t, e, Redirect{User: "bob", Op: RedirectOpen, Path: "/f", Datanode: "dn1", Inode: 4, Offset: 10, Length: 5, HasLength: true})
	tail := redirectFor(t, e, Redirect{User: "bob", Op: RedirectOpen, Path: "/f", Datanode: "dn1", Inode: 4, Offset: 10})
	gbl := func(off, n uint64) *api.GetBlockLocationsRequest {
		return &api.GetBlockLocationsRequest{Path: "/f", Offset: off, Length: n}
	}
	goodCreate := &api.CreateRequest{Path: "/f", Overwrite: true, CreateParent: true, Mode: 0o640, Replication: 2, BlockSize: 1 << 20}
	cases := []struct {
		name   string
		dn     string
		tok    []byte
		method string
		req    any
		user   string // "" = refused
		kind   errs.Kind
	}{
		{"create", "dn1", create, api.ClientService_Create_FullMethodName, goodCreate, "alice", 0},
		{"add block", "dn1", create, api.ClientService_AddBlock_FullMethodName, &api.AddBlockRequest{Path: "/f"}, "alice", 0},
		{"complete", "dn1", create, api.ClientService_Complete_FullMethodName, &api.CompleteRequest{Path: "/f"}, "alice", 0},
		{"open", "dn1", open, api.ClientService_GetBlockLocations_FullMethodName, &api.GetBlockLocationsRequest{Path: "/f"}, "bob", 0},
		{"stat", "dn1", open, api.ClientService_GetFileInfo_FullMethodName, &api.GetFileInfoRequest{Path: "/f"}, "bob", 0},
		{"append", "dn1", appendTok, api.ClientService_Append_FullMethodName, &api.AppendRequest{Path: "/f"}, "carol", 0},
		{"append adds a block", "dn1", appendTok, api.ClientService_AddBlock_FullMethodName, &api.AddBlockRequest{Path: "/f"}, "carol", 0},
		{"append completes", "dn1", appendTok, api.ClientService_Complete_FullMethodName, &api.CompleteRequest{Path: "/f"}, "carol", 0},
		{"append abandons", "dn1", appendTok, api.ClientService_AbandonBlock_FullMethodName, &api.AbandonBlockRequest{Path: "/f"}, "carol", 0},
		{"append stats", "dn1", appendTok, api.ClientService_GetFileInfo_FullMethodName, &api.GetFileInfoRequest{Path: "/f"}, "carol", 0},
		{"append token creates", "dn1", appendTok, api.ClientService_Create_FullMethodName, goodCreate, "", errs.Permission},
		{"append token reads", "dn1", appendTok, api.ClientService_GetBlockLocations_FullMethodName, &api.GetBlockLocationsRequest{Path: "/f"}, "", errs.Permission},
		{"append token deletes", "dn1", appendTok, api.ClientService_Delete_FullMethodName, &api.DeleteRequest{Path: "/f"}, "", errs.Permission},
		{"append other path", "dn1", appendTok, api.ClientService_Append_FullMethodName, &api.AppendRequest{Path: "/g"}, "", errs.Permission},
		{"create token appends (fsspec's follow-on APPENDs)", "dn1", create, api.ClientService_Append_FullMethodName, &api.AppendRequest{Path: "/f"}, "alice", 0},
		{"open token appends", "dn1", open, api.ClientService_Append_FullMethodName, &api.AppendRequest{Path: "/f"}, "", errs.Permission},
		{"other datanode", "dn2", create, api.ClientService_Create_FullMethodName, goodCreate, "", errs.Permission},
		{"other path", "dn1", create, api.ClientService_Create_FullMethodName, &api.CreateRequest{Path: "/g", Overwrite: true, CreateParent: true, Mode: 0o640, Replication: 2, BlockSize: 1 << 20}, "", errs.Permission},
		{"other params", "dn1", create, api.ClientService_Create_FullMethodName, &api.CreateRequest{Path: "/f", Overwrite: true, CreateParent: true, Mode: 0o777, Replication: 2, BlockSize: 1 << 20}, "", errs.Permission},
		{"open token creates", "dn1", open, api.ClientService_Create_FullMethodName, goodCreate, "", errs.Permission},
		{"create token reads", "dn1", create, api.ClientService_GetBlockLocations_FullMethodName, &api.GetBlockLocationsRequest{Path: "/f"}, "", errs.Permission},
		{"not delegated", "dn1", create, api.ClientService_Delete_FullMethodName, &api.DeleteRequest{Path: "/f"}, "", errs.Permission},
		{"open range: the signed one", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(10, 5), "bob", 0},
		{"open range: inside it", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(12, 3), "bob", 0},
		{"open range: the whole file", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(0, 0), "", errs.Permission},
		{"open range: to the end", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(10, 0), "", errs.Permission},
		{"open range: before it", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(9, 2), "", errs.Permission},
		{"open range: past its end", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(12, 4), "", errs.Permission},
		{"open range: after it", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(15, 1), "", errs.Permission},
		{"open range: a length that wraps", "dn1", ranged, api.ClientService_GetBlockLocations_FullMethodName, gbl(12, ^uint64(0)), "", errs.Permission},
		{"open to the end: from its offset", "dn1", tail, api.ClientService_GetBlockLocations_FullMethodName, gbl(10, 0), "bob", 0},
		{"open to the end: before its offset", "dn1", tail, api.ClientService_GetBlockLocations_FullMethodName, gbl(0, 0), "", errs.Permission},
		{"garbage token", "dn1", []byte("x.y.z"), api.ClientService_Create_FullMethodName, goodCreate, "", errs.Unauthenticated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(UserKey, c.dn, RoleKey, "datanode", DelegationKey, string(c.tok)))
			ctx, err := a.Authorize(ctx, c.method, c.req)
			if c.user == "" {
				if errs.KindOf(err) != c.kind {
					t.Fatalf("got %v, want kind %v", err, c.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := IdentityFromContext(ctx); id != (Identity{Role: RoleUser, Name: c.user}) {
				t.Fatalf("runs as %v, want user/%s", id, c.user)
			}
			if r, ok := RedirectFromContext(ctx); !ok || r.User != c.user || r.Nonce == "" {
				t.Fatalf("the handler sees redirect %+v (%v), want the token's", r, ok)
			}
		})
	}
}
