package raftnet_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/internal/node/raftnet"
)

// admission is a mutable set of admitted names, with the refusals of RPCs.
type admission struct {
	mu      sync.Mutex
	allowed map[string]string // name -> reason it is refused ("" admitted)
	addrs   map[string]raft.ServerAddress
	rpcs    chan string // "rpc/reason"
}

func (a *admission) set(name, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowed[name] = reason
}

func (a *admission) options(o *raftnet.Options) {
	o.Admit = func(name string) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		reason, ok := a.allowed[name]
		switch {
		case !ok:
			return errors.New("not a server of the configuration")
		case reason != "":
			return raftnet.Refuse(reason, errors.New("refused"))
		}
		return nil
	}
	o.PeerAddr = func(id string) (raft.ServerAddress, bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		addr, ok := a.addrs[id]
		return addr, ok
	}
	o.RPCRefused = func(rpc, reason, _ string, _ net.Addr, _ error) { a.rpcs <- rpc + "/" + reason }
}

func (a *admission) next(t *testing.T) string {
	t.Helper()
	select {
	case r := <-a.rpcs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no RPC refusal reported")
		return ""
	}
}

// TestGuard: a namenode certificate gets RPCs through only while Admit
// admits its name and only under its own name (and address) in the RPC
// header; anything else is refused at the handshake or closes the
// connection, is reported, and never reaches Raft. A member's RPCs,
// InstallSnapshot's stream included, pass unchanged and in order.
func TestGuard(t *testing.T) {
	p := newPKI(t)
	const self, peer = "nn1", "nn2"
	for _, tc := range []struct {
		name    string
		cert    string // the dialer's certificate name
		from    string // the RPC header's sender id
		addr    string // the header's address ("" the default)
		reason  string // admission of cert: "" admitted, "-" unknown, else a refusal reason
		refused string // "in/<reason>" handshake refusal, "<rpc>/<reason>" RPC refusal, "" none
	}{
		{"member as itself", peer, peer, "", "", ""},
		{"never a member", "nn9", "nn9", "", "-", "in/" + raftnet.ReasonNotMember},
		{"revoked", peer, peer, "", raftnet.ReasonRevoked, "in/" + raftnet.ReasonRevoked},
		{"member posing as another", peer, "nn3", "", "", "AppendEntries/" + raftnet.ReasonHeaderID},
		{"member with no sender id", peer, "", "", "", "AppendEntries/" + raftnet.ReasonHeaderID},
		{"member giving another's address", peer, peer, "127.0.0.1:9", "", "AppendEntries/" + raftnet.ReasonHeaderAddr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission{allowed: map[string]string{}, addrs: map[string]raft.ServerAddress{}, rpcs: make(chan string, 16)}
			if tc.reason != "-" {
				a.set(tc.cert, tc.reason)
			}
			a.addrs[peer] = "127.0.0.1:1"
			srv := p.layer(self, 0, nil, a.options)
			_, got := server(t, srv)
			dialer := p.layer(tc.cert, 0, nil)
			tr := raft.NewNetworkTransport(dialer, 1, 5*time.Second, io.Discard)
			defer tr.Close()
			target := raft.ServerAddress(srv.Addr().String())
			sent := 0
			for _, at := range attacks(tc.from) {
				err := sendAs(at, tr, target, tc.addr)
				if tc.refused == "" {
					if err != nil {
						t.Fatalf("%s: %v", at.name, err)
					}
					sent++
					continue
				}
				if err == nil {
					t.Fatalf("%s went through", at.name)
				}
				break
			}
			switch {
			case tc.refused == "":
			case tc.refused[:3] == "in/":
				if r := srv.next(t); r != tc.refused {
					t.Fatalf("refusal %q, want %q", r, tc.refused)
				}
			default:
				if r := a.next(t); r != tc.refused {
					t.Fatalf("RPC refusal %q, want %q", r, tc.refused)
				}
			}
			if n := got.Load(); n != int64(sent) {
				t.Fatalf("%d RPCs reached Raft, want %d", n, sent)
			}
		})
	}
}

// sendAs sends at, with the header's address replaced by addr when given.
func sendAs(at attack, tr raft.Transport, target raft.ServerAddress, addr string) error {
	if addr == "" {
		return at.send(tr, target)
	}
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries("victim", target, &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("nn2"), Addr: []byte(addr)}, Term: 1000,
	}, &resp)
}

// TestGuardRemovedMidConnection: a member removed (or revoked) while its
// connection is open has its next RPC refused and the connection closed,
// without a new handshake.
func TestGuardRemovedMidConnection(t *testing.T) {
	p := newPKI(t)
	for _, reason := range []string{raftnet.ReasonNotMember, raftnet.ReasonRevoked} {
		t.Run(reason, func(t *testing.T) {
			a := &admission{allowed: map[string]string{"nn2": ""}, addrs: map[string]raft.ServerAddress{}, rpcs: make(chan string, 16)}
			srv := p.layer("nn1", 0, nil, a.options)
			_, got := server(t, srv)
			tr := raft.NewNetworkTransport(p.layer("nn2", 0, nil), 1, 5*time.Second, io.Discard)
			defer tr.Close()
			target := raft.ServerAddress(srv.Addr().String())
			vote := attacks("nn2")[1]
			if err := vote.send(tr, target); err != nil {
				t.Fatal(err)
			}
			if reason == raftnet.ReasonNotMember {
				a.mu.Lock()
				delete(a.allowed, "nn2")
				a.mu.Unlock()
			} else {
				a.set("nn2", reason)
			}
			if err := vote.send(tr, target); err == nil {
				t.Fatal("the removed member's RPC went through")
			}
			if r := a.next(t); r != "RequestVote/"+reason {
				t.Fatalf("RPC refusal %q", r)
			}
			if n := got.Load(); n != 1 {
				t.Fatalf("%d RPCs reached Raft, want 1", n)
			}
		})
	}
}

// TestGuardSnapshotStream: an InstallSnapshot's data passes through the
// guard byte for byte, and the RPCs after it on the same connection are
// still parsed and checked.
func TestGuardSnapshotStream(t *testing.T) {
	p := newPKI(t)
	a := &admission{allowed: map[string]string{"nn2": ""}, addrs: map[string]raft.ServerAddress{}, rpcs: make(chan string, 16)}
	srv := p.layer("nn1", 0, nil, a.options)
	trans := raft.NewNetworkTransport(srv, 2, 5*time.Second, io.Discard)
	data := bytes.Repeat([]byte("snapshot "), 50_000)
	gotData := make(chan []byte, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done; trans.Close() }()
	go func() {
		defer close(done)
		for {
			var rpc raft.RPC
			select {
			case rpc = <-trans.Consumer():
			case <-stop:
				return
			}
			switch rpc.Command.(type) {
			case *raft.InstallSnapshotRequest:
				b, _ := io.ReadAll(rpc.Reader)
				gotData <- b
				rpc.Respond(&raft.InstallSnapshotResponse{Term: 1, Success: true}, nil)
			default:
				rpc.Respond(&raft.RequestVoteResponse{Term: 1}, nil)
			}
		}
	}()
	tr := raft.NewNetworkTransport(p.layer("nn2", 0, nil), 1, 5*time.Second, io.Discard)
	defer tr.Close()
	target := raft.ServerAddress(srv.Addr().String())
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("nn2")}
	var resp raft.InstallSnapshotResponse
	if err := tr.InstallSnapshot("nn1", target, &raft.InstallSnapshotRequest{
		RPCHeader: hdr, SnapshotVersion: raft.SnapshotVersionMax, Term: 2, LastLogIndex: 9, LastLogTerm: 2, Size: int64(len(data)),
	}, &resp, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if b := <-gotData; !bytes.Equal(b, data) {
		t.Fatalf("snapshot arrived as %d bytes, want %d", len(b), len(data))
	}
	for _, from := range []string{"nn2", "nn3"} {
		var vr raft.RequestVoteResponse
		err := tr.RequestVote("nn1", target, &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(from)}, Term: 3}, &vr)
		if (err == nil) != (from == "nn2") {
			t.Fatalf("vote as %s after a snapshot: %v", from, err)
		}
	}
	if r := a.next(t); r != "RequestVote/"+raftnet.ReasonHeaderID {
		t.Fatalf("RPC refusal %q", r)
	}
}
