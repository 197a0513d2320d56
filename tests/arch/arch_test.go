// Package arch holds the tests that keep blockfs's package structure as
// docs/ARCHITECTURE.md draws it: the floors of the import graph, the
// doors that must not reach into the servers, and the size limits.
package arch

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/blockfs/blockfs"

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	GoFiles    []string
	Dir        string
}

// list returns every package of the module, with its direct imports and
// its transitive dependencies (non-test).
func list(t *testing.T) map[string]pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", "list", "-json", mod+"/...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, mod+"/")] = p
	}
	return pkgs
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// ours returns the module's packages among paths, without the module prefix.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, mod+"/"); ok {
			out = append(out, rest)
		}
	}
	return out
}

// TestFloors: each package imports only what its floor allows. A rule
// names the packages it constrains (a prefix ending in "/" covers a
// subtree) and the module packages they may depend on, transitively.
func TestFloors(t *testing.T) {
	pkgs := list(t)
	base := []string{"errs", "errs/hadoop", "internal/base/"}
	libs := append([]string{"api", "namespace", "leases", "security"}, base...)
	rules := []struct {
		name    string
		who     []string
		mayDeps []string // transitive
	}{
		{"leaves import nothing but errs", []string{"internal/base/"}, base},
		{"errs and api are the ground", []string{"errs", "api"}, []string{"errs", "api"}},
		{"the Hadoop exception mapping is errs's alone", []string{"errs/hadoop"}, []string{"errs"}},
		{"namespace", []string{"namespace"}, base},
		{"leases", []string{"leases"}, append([]string{"namespace"}, base...)},
		{"blocks", []string{"blocks"}, append([]string{"topology"}, base...)},
		{"lbm", []string{"lbm"}, base},
		{"security", []string{"security"}, append([]string{"api"}, base...)},
		{"node plumbing", []string{"internal/node/"}, append([]string{"api", "security", "internal/node/"}, base...)},
		{"the FSM is a core of its own", []string{"namenode/fsm"}, libs},
		{"the Raft store", []string{"namenode/raftstore"}, base},
		{"the proposer", []string{"namenode/proposer"}, append([]string{"namenode/fsm"}, libs...)},
		{"the id ranges", []string{"namenode/idrange"}, base},
		{"the web UI door", []string{"namenode/webui"}, append([]string{"internal/node/"}, libs...)},
		{"the WebHDFS door", []string{"webhdfs"}, append([]string{"client", "trash", "internal/node/"}, libs...)},
		{"the HDFS data transfer door", []string{"datatransfer"}, append([]string{"api/hadoop/"}, base...)},
		{"Hadoop IPC framing", []string{"hadoopipc"}, append([]string{"api/hadoop/"}, base...)},
		{"the HDFS RPC door", []string{"hdfsrpc"}, append([]string{"api", "api/hadoop/", "hadoopipc"}, base...)},
		{"the trash", []string{"trash"}, append([]string{"api"}, base...)},
		{"the topology", []string{"topology"}, base},
		{"the balancer", []string{"balancer"}, append([]string{"api", "blocks", "topology"}, base...)},
		{"safe mode and the report parts", []string{"namenode/safemode", "namenode/reports"}, append([]string{"api", "blocks", "topology"}, base...)},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			n := 0
			for name, p := range pkgs {
				if !covered(name, r.who) {
					continue
				}
				n++
				for _, d := range ours(p.Deps) {
					if !covered(d, r.mayDeps) && !covered(d, r.who) {
						t.Errorf("%s depends on %s", name, d)
					}
				}
			}
			if n == 0 {
				t.Fatalf("no package matches %v: the rule is stale", r.who)
			}
		})
	}
}

// TestNoTestHelpersInProduction: nothing but tests imports
// internal/testutil.
func TestNoTestHelpersInProduction(t *testing.T) {
	for name, p := range list(t) {
		if strings.HasPrefix(name, "internal/testutil/") {
			continue
		}
		for _, d := range ours(p.Imports) {
			if strings.HasPrefix(d, "internal/testutil/") {
				t.Errorf("%s imports %s", name, d)
			}
		}
	}
}

// TestSizes: namenode/ stays at most 4,500 lines of non-test code, and no
// hand-written Go file is over 600 lines.
func TestSizes(t *testing.T) {
	const maxNamenode, maxFile = 4500, 600
	nn := 0
	for name, p := range list(t) {
		for _, f := range p.GoFiles {
			n := lines(t, filepath.Join(p.Dir, f))
			if name == "namenode" {
				nn += n
			}
		}
	}
	if nn > maxNamenode {
		t.Errorf("namenode/ has %d lines of non-test code; at most %d", nn, maxNamenode)
	}
	err := filepath.WalkDir(root(t), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains([]string{".git", "node_modules", "testdata"}, d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".pb.go") {
			return nil
		}
		if n := lines(t, path); n > maxFile {
			t.Errorf("%s has %d lines; at most %d", path, n, maxFile)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func covered(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if name == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(name, p)) || name == strings.TrimSuffix(p, "/") {
			return true
		}
	}
	return false
}

func lines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		n++
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
