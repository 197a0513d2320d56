package datanode

import (
	"bytes"
	"context"
	"strings"
	"testing"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/testutil/hdfsdata"
	"github.com/blockfs/blockfs/security"
)

// TestHDFSDataAddr: the door is off by default, refuses to bind off
// loopback without --hdfs-data-insecure, and when on registers its
// address with the datanode's info.
func TestHDFSDataAddr(t *testing.T) {
	d := startDN(t, testConfig(t))
	if d.HDFSDataAddr() != "" || d.Info().HdfsDataAddr != "" {
		t.Fatalf("door on by default at %q", d.HDFSDataAddr())
	}
	for _, addr := range []string{":0", "0.0.0.0:0", "192.0.2.1:9866", "dn1.example:9866"} {
		cfg := testConfig(t)
		cfg.HDFSDataAddr = addr
		_, err := Start(context.Background(), cfg, nil)
		if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), "--hdfs-data-insecure") {
			t.Fatalf("door on %s: %v, want a refusal naming --hdfs-data-insecure", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		cfg := testConfig(t)
		cfg.HDFSDataAddr = addr
		d, err := Start(context.Background(), cfg, nil)
		if err != nil {
			if addr == "[::1]:0" && strings.Contains(err.Error(), "assign requested address") {
				continue // no IPv6 loopback here
			}
			t.Fatalf("door on %s: %v", addr, err)
		}
		if got := d.Info().HdfsDataAddr; got == "" || got != d.HDFSDataAddr() {
			t.Fatalf("registered %q, bound %q", got, d.HDFSDataAddr())
		}
		d.Close()
	}
}

// TestHDFSDataDoorPaths: a block written through the door is the one the
// gRPC ReadBlock serves, and the other way round; the token's inode is
// recorded with the replica.
func TestHDFSDataDoorPaths(t *testing.T) {
	cfg := testConfig(t)
	cfg.HDFSDataAddr = "127.0.0.1:0"
	d := startDN(t, cfg)
	c := dataClient(t, d.Addr())
	pool := "BP-" + security.DefaultTrustDomain
	data := randBytes(70<<10 + 5)
	tok := blockToken(7, 1, security.Write)
	err := hdfsdata.WriteTo(d.HDFSDataAddr(), hdfsdata.Write{Block: hdfsdata.Block(pool, 7, 1, 0), Token: hdfsdata.Token(tok),
		Stage: hdfs.OpWriteBlockProto_PIPELINE_SETUP_CREATE, Data: data, PacketBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if info, ok := d.Store().Stat(7); !ok || info.Inode != testInode || info.Length != int64(len(data)) {
		t.Fatalf("stored %+v, %v", info, ok)
	}
	if got, err := read(c, 7, 1, 0, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("gRPC read of the door's write: %v", err)
	}
	other := randBytes(3000)
	writeOK(t, c, 8, other)
	rtok := blockToken(8, 1, security.Read)
	if got, err := hdfsdata.Read(d.HDFSDataAddr(), hdfsdata.Block(pool, 8, 1, 3000), hdfsdata.Token(rtok), 100, 2900); err != nil || !bytes.Equal(got, other[100:]) {
		t.Fatalf("door read of a gRPC write: %v", err)
	}
}
