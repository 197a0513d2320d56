package audit

import (
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/blockfs/blockfs/internal/testutil/leaktest"
	"github.com/blockfs/blockfs/internal/testutil/syncbuf"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

func TestLines(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 57, 24, 123e6, time.UTC)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	cases := []struct {
		name string
		e    Event
		want string
	}{
		{"create", Event{Time: at, Allowed: true, User: "alice", Auth: "MTLS", Addr: addr, Cmd: "create", Src: "/data/x",
			Perm: Perm{Owner: "alice", Group: "supergroup", Mode: 0o644}, Proto: "rpc"},
			"2026-12-01 22:57:24,123 INFO FSNamesystem.audit: allowed=true\tugi=alice (auth:MTLS)\tip=/127.0.0.1\tcmd=create\tsrc=/data/x\tdst=null\tperm=alice:supergroup:rw-r--r--\tproto=rpc\n"},
		{"refused rename", Event{Time: at, User: "bob", Auth: "SIMPLE", Cmd: "rename", Src: "/a", Dst: "/b", Proto: "webhdfs"},
			"2026-12-01 22:57:24,123 INFO FSNamesystem.audit: allowed=false\tugi=bob (auth:SIMPLE)\tip=null\tcmd=rename\tsrc=/a\tdst=/b\tperm=null\tproto=webhdfs\n"},
		{"sticky dir and a tab in a path", Event{Time: at, Allowed: true, User: "root", Cmd: "mkdirs", Src: "/t\tmp",
			Perm: Perm{Owner: "root", Group: "g", Mode: 0o1777}, Proto: "http"},
			"2026-12-01 22:57:24,123 INFO FSNamesystem.audit: allowed=true\tugi=root\tip=null\tcmd=mkdirs\tsrc=/t\\tmp\tdst=null\tperm=root:g:rwxrwxrwt\tproto=http\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, n := readRecord(appendRecord(nil, &c.e))
			if n != len(appendRecord(nil, &c.e)) {
				t.Fatalf("record read %d bytes of %d", n, len(appendRecord(nil, &c.e)))
			}
			if got := string(r.appendLine(nil)); got != c.want {
				t.Fatalf("line\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestLoggerWritesInTimeOrder(t *testing.T) {
	var out syncbuf.Buffer
	cfg := DefaultConfig()
	cfg.Output, cfg.FlushInterval = &out, time.Hour // only Flush and Close write
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				l.Log(Event{Time: base.Add(time.Duration(i*8+g) * time.Millisecond), Allowed: true, User: "u", Cmd: "open", Src: "/f"})
			}
		}()
	}
	wg.Wait()
	l.Flush()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] < lines[i-1] {
			t.Fatalf("line %d is before line %d:\n%s\n%s", i, i-1, lines[i], lines[i-1])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLoggerDropsRatherThanWaits: with the writer stalled, Log never
// blocks; what does not fit is dropped and counted.
func TestLoggerDropsRatherThanWaits(t *testing.T) {
	block := make(chan struct{})
	out := writerFunc(func(p []byte) (int, error) { <-block; return len(p), nil })
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Output, cfg.Buffer, cfg.FlushInterval, cfg.Registerer = out, 64, time.Millisecond, reg
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 10_000 {
		l.Log(Event{Time: time.Now(), Cmd: "open"})
	}
	close(block)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dropped := testutil.ToFloat64(l.dropped)
	written := testutil.ToFloat64(l.written)
	if dropped == 0 || dropped+written != 10_000 {
		t.Fatalf("dropped %v, written %v: want some dropped and every event counted once", dropped, written)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.MaxSizeMB = 0 },
		func(c *Config) { c.MaxBackups = -1 },
		func(c *Config) { c.FlushInterval = 0 },
		func(c *Config) { c.Buffer = 1 },
	} {
		c := DefaultConfig()
		c.Stdout = true
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
	if l, err := New(DefaultConfig()); l != nil || err != nil {
		t.Fatalf("a config that logs nowhere gave %v, %v; want no logger", l, err)
	}
	var l *Logger
	l.Log(Event{}) // a nil logger logs nothing
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRotatingFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/audit.log"
	r, err := openRotating(path, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"aaaa\n", "bbbb\n", "cccc\n", "dddd\n", "eeee\n", "ffff\n", "gggggggggggggggg\n"} {
		if _, err := r.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"audit.log": "gggggggggggggggg\n", "audit.log.1": "eeee\nffff\n", "audit.log.2": "cccc\ndddd\n"}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(want) {
		t.Fatalf("files %v, want %d", ents, len(want))
	}
	for name, content := range want {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil || string(b) != content {
			t.Errorf("%s = %q, %v; want %q", name, b, err, content)
		}
	}
}

func TestLoggerRotatingFile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Path = t.TempDir() + "/audit.log"
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l.Log(Event{Time: time.Now(), Allowed: true, User: "alice", Cmd: "delete", Src: "/x"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Path = t.TempDir() + "/no/such/dir\x00/audit.log"
	if _, err := New(cfg); err == nil {
		t.Fatal("an impossible path was accepted")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
