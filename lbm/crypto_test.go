package lbm

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestServerKeyFile(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, testConfig(nil, []string{dir}, true))
	s.Put(ctx, BlockMeta{ID: 1}, blockData(1))
	s.Close()
	fi, err := os.Stat(filepath.Join(dir, "lbm-server.key"))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != keyFileLen {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// Encrypted files stay readable with Encrypt off (the key file is found).
	s = mustOpen(t, testConfig(nil, []string{dir}, false))
	checkBlock(t, s, 1)
	s.Close()
	// Plaintext never hits the disk.
	mf := metaFiles(t, OSFS(), dir)[0]
	b, _ := os.ReadFile(mf)
	if bytes.Contains(b, []byte(metaMagic)) {
		t.Fatal("metadata header in the clear")
	}
	// A different key cannot open it.
	os.Remove(filepath.Join(dir, "lbm-server.key"))
	if _, err := Open(ctx, testConfig(nil, []string{dir}, true)); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestCTRPositional(t *testing.T) {
	k, _ := newKeyring(make([]byte, 32))
	fc, _, err := k.newFileCipher()
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, 1000)
	rand.New(rand.NewSource(1)).Read(plain)
	whole := make([]byte, len(plain))
	fc.xorAt(whole, plain, 128)
	for _, sl := range [][2]int{{0, 1}, {3, 17}, {15, 16}, {16, 32}, {500, 999}, {7, 1000}} {
		part := make([]byte, sl[1]-sl[0])
		fc.xorAt(part, plain[sl[0]:sl[1]], int64(128+sl[0]))
		if !bytes.Equal(part, whole[sl[0]:sl[1]]) {
			t.Fatalf("slice %v differs", sl)
		}
	}
	// Counter carry across the low 64 bits.
	fc.iv = [16]byte{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	a := make([]byte, 64)
	fc.xorAt(a, make([]byte, 64), 0)
	b := make([]byte, 32)
	fc.xorAt(b, make([]byte, 32), 32)
	if !bytes.Equal(a[32:], b) {
		t.Fatal("carry")
	}
}
