package audit

import (
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkLog is the request path's cost of one audit event (the writer
// formats and writes to io.Discard beside it).
func BenchmarkLog(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Output = io.Discard
	l, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := Event{Allowed: true, User: "alice", Auth: "MTLS", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5000},
		Cmd: "open", Src: "/user/alice/data/part-00000", Proto: "rpc"}
	b.ReportAllocs()
	for b.Loop() {
		e.Time = time.Now()
		l.Log(e)
	}
}
