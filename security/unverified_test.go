package security

import (
	"bytes"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// TestUnverified: the subject and inode come out of a genuine token, and
// of a forged one too (nothing is checked: Verify is what refuses it);
// what is not a token with an inode gives nothing.
func TestUnverified(t *testing.T) {
	e := newEnv(t, nil)
	tok := must(t)(e.is.WriteToken("alice", inode, 7, gs))
	cut := bytes.LastIndexByte(tok, '.') + 1
	forged := append(tok[:cut:cut], "c2lnbmF0dXJl"...)
	for _, tc := range []struct {
		name  string
		token []byte
		user  string
		inode uint64
		ok    bool
	}{
		{"genuine", tok, "alice", inode, true},
		{"forged signature", forged, "alice", inode, true},
		{"empty", nil, "", 0, false},
		{"garbage", []byte("not.a.token"), "", 0, false},
		{"no inode", []byte("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJib2IifQ.c2ln"), "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, ino, ok := Unverified(tc.token)
			if user != tc.user || ino != tc.inode || ok != tc.ok {
				t.Fatalf("Unverified = %q, %d, %v; want %q, %d, %v", user, ino, ok, tc.user, tc.inode, tc.ok)
			}
		})
	}
	if _, err := e.v.Verify(tok, Request{Inode: inode, BlockID: 7, GenStamp: gs, Access: Write}); err != nil {
		t.Fatalf("the genuine token: %v", err)
	}
	if _, err := e.v.Verify(forged, Request{Inode: inode, BlockID: 7, GenStamp: gs, Access: Write}); err == nil {
		t.Fatal("the forged token verified")
	}
}

// TestUnverifiedGrants: a writer's rw token says it grants reads and a
// write-only one does not, and either verifies for what it grants only;
// a token it cannot read grants nothing.
func TestUnverifiedGrants(t *testing.T) {
	e := newEnv(t, nil)
	rw := must(t)(e.is.BlockToken("alice", inode, 7, gs, Read|Write))
	w := must(t)(e.is.WriteToken("alice", inode, 7, gs))
	for _, tc := range []struct {
		name  string
		token []byte
		a     Access
		want  bool
	}{
		{"rw reads", rw, Read, true},
		{"rw writes", rw, Write, true},
		{"w does not read", w, Read, false},
		{"w writes", w, Write, true},
		{"garbage", []byte("not.a.token"), Read, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnverifiedGrants(tc.token, tc.a); got != tc.want {
				t.Fatalf("UnverifiedGrants = %v, want %v", got, tc.want)
			}
		})
	}
	read := Request{Inode: inode, BlockID: 7, GenStamp: gs, Access: Read}
	if _, err := e.v.Verify(rw, read); err != nil {
		t.Fatalf("rw token refused for a read of its block: %v", err)
	}
	if _, err := e.v.Verify(w, read); !errs.Is(err, errs.Permission) {
		t.Fatalf("write-only token for a read: %v, want Permission", err)
	}
	other := read
	other.BlockID = 8
	if _, err := e.v.Verify(rw, other); !errs.Is(err, errs.Permission) {
		t.Fatalf("rw token for another block: %v, want Permission", err)
	}
}
