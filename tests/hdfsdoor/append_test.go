package hdfsdoor

import (
	"bytes"
	"errors"
	"io"
	"testing"

	hdfs "github.com/colinmarc/hdfs/v2"
)

// TestAppendThroughTheDoors: an HDFS client appends to a file whose last
// block is full (a new block) and to one whose last block is partial (the
// block reopened under a new generation stamp), and reads every byte back.
func TestAppendThroughTheDoors(t *testing.T) {
	checkLeaks(t)
	c := startCluster(t, 3)
	cl := hdfsClient(t, c, "root")
	const bs = 1 << 20
	for _, size := range []int{bs, bs / 2} {
		data := bytes.Repeat([]byte("x"), size)
		p := "/append-" + string(rune('a'+size%7))
		w, err := cl.CreateFile(p, 3, bs, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		a, err := cl.Append(p)
		if err != nil {
			t.Fatalf("append to %d bytes: %v", size, remote(err))
		}
		if _, err := a.Write([]byte("\nfoo")); err != nil {
			t.Fatalf("append write to %d bytes: %v", size, remote(err))
		}
		if err := a.Close(); err != nil {
			t.Fatalf("append close to %d bytes: %v", size, remote(err))
		}
		r, err := cl.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, append(data, "\nfoo"...)) {
			t.Fatalf("read back after append to %d bytes: %d bytes, %v", size, len(got), err)
		}
	}
}

// remote adds an HDFS client's remote exception message to err.
func remote(err error) error {
	var re hdfs.Error
	if errors.As(err, &re) {
		return errors.New(err.Error() + ": " + re.Exception() + ": " + re.Message())
	}
	return err
}
