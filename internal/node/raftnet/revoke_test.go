package raftnet_test

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/internal/node/raftnet"
	"github.com/blockfs/blockfs/security"
)

func denyNamenode(r *security.Revocations, name string) {
	r.Store(security.NewDenyList([]*api.RevokedEntry{{Role: "namenode", Name: name, RevokedBy: "user/root", RevokedUnixMs: 1}}))
}

// TestRevokedMidConnection: a namenode revoked while its connection is
// open has its next RPC refused (ReasonRevoked) and never reaches Raft; a
// new handshake is refused too. The dialing side checks before every
// write: once the peer it talks to is revoked, nothing more is sent.
func TestRevokedMidConnection(t *testing.T) {
	p := newPKI(t)
	t.Run("inbound", func(t *testing.T) {
		var revs security.Revocations
		a := &admission{allowed: map[string]string{"nn2": ""}, rpcs: make(chan string, 16)}
		srv := p.layer("nn1", 0, nil, a.options, func(o *raftnet.Options) { o.Revoked = &revs })
		_, got := server(t, srv)
		tr := raft.NewNetworkTransport(p.layer("nn2", 0, nil), 1, 5*time.Second, io.Discard)
		defer tr.Close()
		target := raft.ServerAddress(srv.Addr().String())
		vote := attacks("nn2")[1]
		if err := vote.send(tr, target); err != nil {
			t.Fatal(err)
		}
		denyNamenode(&revs, "nn2")
		if err := vote.send(tr, target); err == nil {
			t.Fatal("the revoked member's RPC went through")
		}
		if r := a.next(t); r != "RequestVote/"+raftnet.ReasonRevoked {
			t.Fatalf("RPC refusal %q", r)
		}
		// A new connection is refused at the handshake.
		tr2 := raft.NewNetworkTransport(p.layer("nn2", 0, nil), 1, 5*time.Second, io.Discard)
		defer tr2.Close()
		if err := vote.send(tr2, target); err == nil {
			t.Fatal("the revoked member's new connection went through")
		}
		if r := srv.next(t); r != "in/"+raftnet.ReasonRevoked {
			t.Fatalf("handshake refusal %q", r)
		}
		if n := got.Load(); n != 1 {
			t.Fatalf("%d RPCs reached Raft, want 1", n)
		}
	})
	t.Run("outbound", func(t *testing.T) {
		var revs security.Revocations
		srv := p.layer("nn1", 0, nil, (&admission{allowed: map[string]string{"nn2": ""}, rpcs: make(chan string, 16)}).options)
		_, got := server(t, srv)
		dialer := p.layer("nn2", 0, nil, func(o *raftnet.Options) { o.Revoked = &revs })
		tr := raft.NewNetworkTransport(dialer, 1, 5*time.Second, io.Discard)
		defer tr.Close()
		target := raft.ServerAddress(srv.Addr().String())
		vote := attacks("nn2")[1]
		if err := vote.send(tr, target); err != nil {
			t.Fatal(err)
		}
		denyNamenode(&revs, "nn1")
		if err := vote.send(tr, target); err == nil {
			t.Fatal("an RPC went to the revoked peer")
		}
		if r := dialer.next(t); r != "out/"+raftnet.ReasonRevoked {
			t.Fatalf("refusal %q", r)
		}
		if n := got.Load(); n != 1 {
			t.Fatalf("%d RPCs reached the revoked peer's Raft, want 1", n)
		}
	})
}
