package datanode

import (
	"bytes"
	"os"
	"testing"
)

// corruptOnDisk flips a byte of data (an unencrypted block's bytes) in the
// data file at path.
func corruptOnDisk(t *testing.T, path string, data []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(raw, data)
	if i < 0 {
		t.Fatal(errNotFound)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{raw[i+len(data)/2] ^ 0xff}, int64(i+len(data)/2)); err != nil {
		t.Fatal(err)
	}
}
