package hadoopipc

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestCloseResetsConnections: a server that stops resets its clients'
// connections, so that an idle client's next call fails on its write (a
// call known not to have been sent, which clients retry elsewhere), not
// with an EOF after it was written.
func TestCloseResetsConnections(t *testing.T) {
	leakCheck(t)
	s, addr := startServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, io.EOF) || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the server closed: %v, want a connection reset", err)
	}
}
