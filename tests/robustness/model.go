package robustness

import (
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind is a namespace operation of the fault suite's model.
type OpKind uint8

// The operations the model knows.
const (
	OpMkdir  OpKind = iota // mkdir without parents
	OpCreate               // create without overwrite or parents
	OpDelete               // recursive delete
	OpRename               // HDFS rename rules
	OpStat                 // get file info
	OpList                 // list a directory (a file lists as itself)
)

var opNames = [...]string{"mkdir", "create", "delete", "rename", "stat", "list"}

func (k OpKind) String() string { return opNames[k] }

// IsWrite reports whether k changes the namespace.
func (k OpKind) IsWrite() bool { return k <= OpRename }

// Input is one operation. Paths are relative to the history's root
// ("/a" means root+"/a"); "/" is the root itself, which always exists.
type Input struct {
	Kind      OpKind
	Path, Dst string
}

// Output is an operation's result. An indeterminate write (the call failed
// or timed out, so it may or may not have happened) has Unknown set and
// must be given Return = math.MaxInt64 in the history.
type Output struct {
	Unknown bool
	OK      bool   // writes: succeeded; list: the path was listable
	Stat    string // stat: "file", "dir" or "none"
	Names   string // list: the entries' names, sorted, comma-joined
	Why     string // an indeterminate write's error, for reports; never compared
}

// Kinds of model entries.
const (
	kindFile = "file"
	kindDir  = "dir"
)

// State is the model's namespace below the root: path -> kind.
type State map[string]string

// encode gives the canonical form porcupine compares and hashes.
func (s State) encode() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s[k])
		b.WriteByte('\n')
	}
	return b.String()
}

func decode(enc string) State {
	s := State{}
	for line := range strings.SplitSeq(enc, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			s[k] = v
		}
	}
	return s
}

func (s State) parentIsDir(p string) bool {
	parent := path.Dir(p)
	return parent == "/" || s[parent] == kindDir
}

func below(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// Apply runs in against s: whether a write succeeds (and the new state,
// which is s itself when nothing changed), or what a read returns.
func (s State) Apply(in Input) (Output, State) {
	switch in.Kind {
	case OpMkdir, OpCreate:
		if _, ok := s[in.Path]; ok || !s.parentIsDir(in.Path) {
			return Output{}, s
		}
		n := s.clone()
		n[in.Path] = map[OpKind]string{OpMkdir: kindDir, OpCreate: kindFile}[in.Kind]
		return Output{OK: true}, n
	case OpDelete:
		if _, ok := s[in.Path]; !ok {
			return Output{}, s
		}
		n := State{}
		for k, v := range s {
			if !below(k, in.Path) {
				n[k] = v
			}
		}
		return Output{OK: true}, n
	case OpRename:
		return s.rename(in.Path, in.Dst)
	case OpStat:
		if k, ok := s[in.Path]; ok {
			return Output{OK: true, Stat: k}, s
		}
		if in.Path == "/" {
			return Output{OK: true, Stat: kindDir}, s
		}
		return Output{OK: true, Stat: "none"}, s
	case OpList:
		if s[in.Path] == kindFile {
			return Output{OK: true, Names: path.Base(in.Path)}, s
		}
		if in.Path != "/" && s[in.Path] != kindDir {
			return Output{}, s
		}
		var names []string
		for k := range s {
			if path.Dir(k) == in.Path {
				names = append(names, path.Base(k))
			}
		}
		slices.Sort(names)
		return Output{OK: true, Names: strings.Join(names, ",")}, s
	}
	panic(fmt.Sprintf("unknown op %d", in.Kind))
}

// rename follows namespace.Tree.Rename: into dst if dst is a directory;
// otherwise dst's parent must be a directory and dst must not exist.
func (s State) rename(src, dst string) (Output, State) {
	sk, ok := s[src]
	if !ok {
		return Output{}, s
	}
	if src == dst {
		return Output{OK: true}, s
	}
	target := dst
	switch dk, exists := s[dst]; {
	case exists && dk == kindFile:
		return Output{}, s
	case exists || dst == "/":
		target = path.Join(dst, path.Base(src))
		if target == src {
			return Output{OK: true}, s
		}
		if _, taken := s[target]; taken {
			return Output{}, s
		}
	case !s.parentIsDir(dst):
		return Output{}, s
	}
	if sk == kindDir && below(path.Dir(target), src) {
		return Output{}, s // into its own subtree
	}
	n := State{}
	for k, v := range s {
		if below(k, src) {
			k = target + k[len(src):]
		}
		n[k] = v
	}
	return Output{OK: true}, n
}

func (s State) clone() State {
	n := make(State, len(s)+1)
	for k, v := range s {
		n[k] = v
	}
	return n
}

// Model is the porcupine model of the namespace below a history's root,
// empty at the start. An Unknown write may have happened or not: it
// takes effect if it would succeed (porcupine may also place it after
// every other operation, which is "never happened").
var Model = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(Input), output.(Output)
		s := decode(state.(string))
		got, next := s.Apply(in)
		if in.Kind.IsWrite() {
			if out.Unknown {
				return true, next.encode()
			}
			if out.OK != got.OK {
				return false, state
			}
			return true, next.encode()
		}
		return got == out, state
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(Input), output.(Output)
		arg := in.Path
		if in.Kind == OpRename {
			arg += " -> " + in.Dst
		}
		var res string
		switch {
		case out.Unknown:
			res = "?"
		case in.Kind == OpStat:
			res = out.Stat
		case in.Kind == OpList && out.OK:
			res = "[" + out.Names + "]"
		default:
			res = fmt.Sprint(out.OK)
		}
		return fmt.Sprintf("%s(%s) -> %s", in.Kind, arg, res)
	},
	DescribeState: func(state any) string {
		return "{" + strings.ReplaceAll(strings.TrimSpace(state.(string)), "\n", ", ") + "}"
	},
}

// LostWrites returns the acknowledged creates and mkdirs whose path is
// missing from final (the state read back at the end, for the paths in
// it) although no delete or rename that could have removed the path (one
// that succeeded or may have, and may be ordered after the create) exists.
func LostWrites(ops []porcupine.Operation, final State, checked []string) []string {
	var lost []string
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if (in.Kind != OpCreate && in.Kind != OpMkdir) || out.Unknown || !out.OK || !slices.Contains(checked, in.Path) {
			continue
		}
		if _, ok := final[in.Path]; ok {
			continue
		}
		removable := false
		for _, w := range ops {
			win, wout := w.Input.(Input), w.Output.(Output)
			if (win.Kind != OpDelete && win.Kind != OpRename) || (!wout.Unknown && !wout.OK) {
				continue
			}
			if below(in.Path, win.Path) && w.Return >= op.Call {
				removable = true
				break
			}
		}
		if !removable {
			lost = append(lost, fmt.Sprintf("%s(%s) acknowledged at %v", in.Kind, in.Path, time.Duration(op.Return)))
		}
	}
	return lost
}
