package webhdfs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
)

// pythonWithFsspec finds a python3 that imports fsspec, pandas and
// requests (Debian's python3-fsspec, python3-pandas, python3-requests;
// .ci/run installs them), or skips the test loudly.
func pythonWithFsspec(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import fsspec.implementations.webhdfs, pandas, requests").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %s", path, bytes.TrimSpace(out)))
	}
	t.Skipf("SKIPPED LOUDLY: no python3 with fsspec, pandas and requests (apt-get install python3-fsspec python3-pandas python3-requests); tried %v", tried)
	return ""
}

// TestFsspecClient drives the cluster through Debian's fsspec WebHDFS
// filesystem and pandas (testdata/fsspec_client.py): mkdir, info, ls, a
// file written over WebHDFS and read back byte-identical by the Go client
// (what dfs get uses), one written by the Go client and read back by
// fsspec, cat with ranges, read_csv from a webhdfs:// URL, mv, rm, and
// fsspec's own writer (open "wb", put, open "ab": CREATE, then an APPEND
// per chunk) read back byte-identical, a CSV it wrote read by pandas, and
// APPEND to an open file refused. Under mTLS the files are 64 MiB each way;
// under simple auth 3 MiB.
func TestFsspecClient(t *testing.T) {
	py := pythonWithFsspec(t)
	for _, c := range []struct {
		name string
		mtls bool
		size int
	}{{"simple", false, 3 << 20}, {"mtls", true, 64 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			if testing.Short() && c.mtls {
				t.Skip("64 MiB each way: not in -short")
			}
			e := startEnv(t, 1, c.mtls, "root")
			cl := e.client()
			// 64 MiB each way under the race detector, beside other
			// packages' clusters: the whole case gets the script's 5 minutes,
			// not ctxT's one (CI ran out of it reading back).
			ctx, cancelAll := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancelAll()
			goData := make([]byte, c.size)
			r := rand.NewChaCha8([32]byte{2})
			r.Read(goData)
			if err := cl.WriteFile(ctx, "/go/big.bin", goData, client.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var csv strings.Builder
			csv.WriteString("name,value\n")
			sum := 0
			for i := range 1000 {
				fmt.Fprintf(&csv, "row%d,%d\n", i, i*3)
				sum += i * 3
			}
			if err := cl.WriteFile(ctx, "/go/table.csv", []byte(csv.String()), client.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitReplicas(t, cl, "/go/big.bin", 1)
			waitReplicas(t, cl, "/go/table.csv", 1)
			// Held open by a writer that never closes it: APPEND is refused.
			if _, err := cl.Create(ctx, "/go/open.bin", client.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			host, port, _ := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(e.nn, "https://"), "http://"))
			args := []string{filepath.Join("testdata", "fsspec_client.py"), host, port, e.user, fmt.Sprint(c.size)}
			env := append(os.Environ(), "NO_PROXY=*", "no_proxy=*")
			if c.mtls {
				ca, cert, key := e.writePEM(t.TempDir())
				args = append(args, ca, cert, key)
				// requests prefers these variables to a session's verify.
				env = append(env, "REQUESTS_CA_BUNDLE="+ca, "CURL_CA_BUNDLE="+ca)
			}
			cmd := exec.CommandContext(ctx, py, args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("python: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var res struct {
				BigSHA     string         `json:"big_sha256"`
				GoBigSHA   string         `json:"go_big_sha256"`
				GoBigSize  int            `json:"go_big_size"`
				CSVRows    int            `json:"csv_rows"`
				CSVSum     int            `json:"csv_sum"`
				CSVColumns []string       `json:"csv_columns"`
				WBSHA      string         `json:"wb_sha256"`
				Appended   int            `json:"appended_size"`
				PyCSVRows  int            `json:"py_csv_rows"`
				PyCSVSum   int            `json:"py_csv_sum"`
				AppendOpen string         `json:"append_open"`
				Checksum   map[string]any `json:"checksum"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("python output: %v: %s", err, out)
			}
			// What fsspec wrote, read back with the Go client (dfs get's path).
			got, err := cl.ReadFile(ctx, "/py/moved.bin")
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(got); len(got) != c.size || hex.EncodeToString(sum[:]) != res.BigSHA {
				t.Errorf("fsspec wrote %d bytes with sha256 %s; Go reads %d bytes with %x", c.size, res.BigSHA, len(got), sum)
			}
			if sum := sha256.Sum256(goData); res.GoBigSize != c.size || res.GoBigSHA != hex.EncodeToString(sum[:]) {
				t.Errorf("Go wrote %d bytes with sha256 %x; fsspec reads %d bytes with %s", c.size, sum, res.GoBigSize, res.GoBigSHA)
			}
			if res.CSVRows != 1000 || res.CSVSum != sum || strings.Join(res.CSVColumns, ",") != "name,value" {
				t.Errorf("pandas read %d rows summing to %d with columns %v", res.CSVRows, res.CSVSum, res.CSVColumns)
			}
			// What fsspec's own writer (CREATE, then an APPEND per chunk)
			// wrote, read back with the Go client.
			wb, err := cl.ReadFile(ctx, "/py/wb.bin")
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(wb); len(wb) != c.size || hex.EncodeToString(sum[:]) != res.WBSHA {
				t.Errorf("fsspec open(wb) wrote %d bytes with sha256 %s; Go reads %d bytes with %x", c.size, res.WBSHA, len(wb), sum)
			}
			if want := min(c.size, 6<<20) + 3 + len("tail"); res.Appended != want {
				t.Errorf("put then open(ab): %d bytes, want %d", res.Appended, want)
			}
			if res.PyCSVRows != 500 || res.PyCSVSum != 7*499*500/2 {
				t.Errorf("pandas read fsspec's CSV as %d rows summing to %d", res.PyCSVRows, res.PyCSVSum)
			}
			if res.AppendOpen != "403 AlreadyBeingCreatedException" {
				t.Errorf("APPEND to a file being written: %q, want 403 AlreadyBeingCreatedException", res.AppendOpen)
			}
			if res.Checksum["algorithm"] != "COMPOSITE-CRC32C" {
				t.Errorf("checksum %v", res.Checksum)
			}
			t.Logf("fsspec: %d bytes each way, checksum %v", c.size, res.Checksum)
		})
	}
}
