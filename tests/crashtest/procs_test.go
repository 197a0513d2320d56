package crashtest

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/blockfs/blockfs/internal/testutil/nodeproc"
)

// binaries are built once per test run by TestMain.
var (
	binDir   string
	buildErr error
)

func TestMain(m *testing.M) {
	if os.Getenv(hflushEnv) != "" {
		os.Exit(m.Run()) // the hflush writer child: no binaries needed
	}
	dir, err := os.MkdirTemp("", "blockfs-crashtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	buildErr = nodeproc.Build(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
