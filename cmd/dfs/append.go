package main

import (
	"flag"
	"io"
	"os"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
)

// cmdAppendToFile appends the local files, in order (- for stdin, only
// alone, as in hdfs dfs -appendToFile), to REMOTE in one append, which
// reopens a short last block and fills it before starting another. A
// missing REMOTE is created, as HDFS does.
func cmdAppendToFile(e *env, _ *flag.FlagSet, args []string) error {
	const op = "appendToFile"
	locals, remote := args[:len(args)-1], args[len(args)-1]
	if err := checkPath(op, remote); err != nil {
		return err
	}
	var srcs []io.Reader
	for _, l := range locals {
		if l == "-" {
			if len(locals) > 1 {
				return &pathErr{op, l, errs.New(errs.Invalid, "", "", "- (stdin) must be the only source")}
			}
			srcs = append(srcs, e.stdin)
			continue
		}
		f, err := os.Open(l)
		if err != nil {
			return &pathErr{op, l, localErr(err)}
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil {
			return &pathErr{op, l, localErr(err)}
		} else if st.IsDir() {
			return &pathErr{op, l, errs.E(errs.IsDir)}
		}
		srcs = append(srcs, f)
	}
	w, err := e.cl.Append(e.ctx, remote)
	if errs.Is(err, errs.NotFound) {
		w, err = e.cl.Create(e.ctx, remote, client.CreateOptions{NonRecursive: true})
	}
	if err != nil {
		return &pathErr{op, remote, err}
	}
	buf := make([]byte, 4<<20)
	if _, err := io.CopyBuffer(w, io.MultiReader(srcs...), buf); err != nil {
		w.Close()
		return &pathErr{op, remote, err}
	}
	if err := w.Close(); err != nil {
		return &pathErr{op, remote, err}
	}
	return nil
}
