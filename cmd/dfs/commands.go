package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
)

// fileJSON is a path's status in --json output.
type fileJSON struct {
	Path              string `json:"path"`
	Type              string `json:"type"` // "file" or "dir"
	Length            uint64 `json:"length"`
	Mode              string `json:"mode"` // octal
	Perm              string `json:"perm"` // rwxr-xr-x
	Owner             string `json:"owner"`
	Group             string `json:"group"`
	Mtime             string `json:"mtime"` // RFC 3339
	Atime             string `json:"atime"` // RFC 3339
	Replication       uint32 `json:"replication,omitempty"`
	BlockSize         uint64 `json:"block_size,omitempty"`
	Blocks            uint64 `json:"blocks,omitempty"`
	Children          uint64 `json:"children,omitempty"`
	InodeID           uint64 `json:"inode_id"`
	UnderConstruction bool   `json:"under_construction,omitempty"`
}

func toJSON(st *api.FileStatus) fileJSON {
	t := "file"
	if st.IsDir {
		t = "dir"
	}
	return fileJSON{
		Path: st.Path, Type: t, Length: st.Length, Mode: fmt.Sprintf("%04o", st.Mode), Perm: permString(st),
		Owner: st.Owner, Group: st.Group, Mtime: mtime(st).Format(time.RFC3339Nano), Atime: time.UnixMilli(st.AtimeUnixMs).UTC().Format(time.RFC3339Nano), Replication: st.Replication,
		BlockSize: st.BlockSize, Blocks: st.Blocks, Children: st.Children, InodeID: st.InodeId, UnderConstruction: st.UnderConstruction,
	}
}

func mtime(st *api.FileStatus) time.Time { return time.UnixMilli(st.MtimeUnixMs).UTC() }

// permString renders the mode like ls: drwxr-xr-t.
func permString(st *api.FileStatus) string {
	b := []byte("-rwxrwxrwx")
	if st.IsDir {
		b[0] = 'd'
	}
	for i := range 9 {
		if st.Mode&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	if st.Mode&01000 != 0 {
		if b[9] == 'x' {
			b[9] = 't'
		} else {
			b[9] = 'T'
		}
	}
	return string(b)
}

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) table() *tabwriter.Writer { return tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0) }

// checkPath rejects relative paths up front with a clear message.
func checkPath(op, p string) error {
	if !strings.HasPrefix(p, "/") {
		return &pathErr{op, p, errs.New(errs.Invalid, "", "", "path must be absolute (start with /)")}
	}
	return nil
}

func cmdLs(e *env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		args = []string{"/"}
	}
	recursive := flagBool(fs, "R")
	var all []fileJSON
	tw := e.table()
	emit := func(st *api.FileStatus) {
		if e.json {
			all = append(all, toJSON(st))
			return
		}
		repl := "-"
		if !st.IsDir {
			repl = strconv.Itoa(int(st.Replication))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", permString(st), repl, st.Owner, st.Group, st.Length,
			mtime(st).Local().Format("2006-01-02 15:04"), st.Path)
	}
	var walk func(p string) error
	walk = func(p string) error {
		for st, err := range e.cl.List(e.ctx, p) {
			if err != nil {
				return err
			}
			emit(st)
			if recursive && st.IsDir {
				if err := walk(st.Path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, p := range args {
		if err := checkPath("ls", p); err != nil {
			e.fail(err)
			continue
		}
		st, err := e.cl.Stat(e.ctx, p)
		if err == nil && !st.IsDir {
			emit(st)
			continue
		}
		if err == nil {
			err = walk(p)
		}
		if err != nil {
			e.fail(&pathErr{"ls", p, err})
		}
	}
	if e.json {
		if all == nil {
			all = []fileJSON{}
		}
		return e.printJSON(all)
	}
	return tw.Flush()
}

func cmdMkdir(e *env, fs *flag.FlagSet, args []string) error {
	parents := flagBool(fs, "p")
	for _, p := range args {
		if err := checkPath("mkdir", p); err != nil {
			e.fail(err)
			continue
		}
		if err := e.cl.Mkdirs(e.ctx, p, 0, parents); err != nil {
			e.fail(&pathErr{"mkdir", p, err})
		}
	}
	return nil
}

// explicitZero refuses a flag among names given as 0: left out, the
// namenode's default applies, but 0 itself is no replication and no
// block size (WebHDFS refuses replication=0 too).
func explicitZero(fs *flag.FlagSet, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(names, f.Name) && f.Value.String() == "0" {
			err = usageErr{fmt.Sprintf("-%s 0: want 1 or more (leave -%s out for the namenode's default)", f.Name, f.Name)}
		}
	})
	return err
}

func putFlags(fs *flag.FlagSet) {
	fs.Bool("f", false, "overwrite an existing file")
	fs.Uint("replication", 0, "replication of the new file (default: the namenode's)")
	fs.Uint64("blocksize", 0, "block size of the new file in bytes (default: the namenode's)")
}

// progressThreshold is the file size from which put and get draw a
// progress bar (on a terminal).
const progressThreshold = 8 << 20

func (e *env) bar(size int64, desc string) io.Writer {
	if !e.progress || size < progressThreshold {
		return io.Discard
	}
	return progressbar.NewOptions64(size, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())
}

// smallPut is the largest local file put writes with client.PutFile (the
// client's default FanOutMax).
const smallPut = 64 << 10

func cmdPut(e *env, fs *flag.FlagSet, args []string) error {
	local, remote := args[0], args[1]
	if err := checkPath("put", remote); err != nil {
		return err
	}
	if err := explicitZero(fs, "replication", "blocksize"); err != nil {
		return err
	}
	var in io.Reader = e.stdin
	size := int64(-1)
	if local != "-" {
		f, err := os.Open(local)
		if err != nil {
			return &pathErr{"put", local, localErr(err)}
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return &pathErr{"put", local, localErr(err)}
		}
		if st.IsDir() {
			return &pathErr{"put", local, errs.E(errs.IsDir)}
		}
		in, size = f, st.Size()
	}
	// Into a directory: keep the local name, like cp.
	if st, err := e.cl.Stat(e.ctx, remote); err == nil && st.IsDir {
		if local == "-" {
			return &pathErr{"put", remote, errs.E(errs.IsDir)}
		}
		remote = path.Join(remote, filepath.Base(local))
	}
	repl, _ := strconv.ParseUint(fs.Lookup("replication").Value.String(), 10, 32)
	bs, _ := strconv.ParseUint(fs.Lookup("blocksize").Value.String(), 10, 64)
	o := client.CreateOptions{Overwrite: flagBool(fs, "f"), Replication: uint32(repl), BlockSize: bs}
	if size > 0 && size <= smallPut {
		// A small file goes in one Raft entry (client.PutFile), whole.
		data, err := io.ReadAll(io.LimitReader(in, size+1))
		if err != nil {
			return &pathErr{"put", local, localErr(err)}
		}
		if int64(len(data)) == size {
			if err := e.cl.PutFile(e.ctx, remote, data, o); err != nil {
				return &pathErr{"put", remote, err}
			}
			_, err := e.bar(size, "put "+remote).Write(data)
			return err
		}
		in = io.MultiReader(bytes.NewReader(data), in) // it grew meanwhile: stream it
	}
	w, err := e.cl.Create(e.ctx, remote, o)
	if err != nil {
		return &pathErr{"put", remote, err}
	}
	buf := make([]byte, 4<<20)
	if _, err := io.CopyBuffer(io.MultiWriter(w, e.bar(size, "put "+remote)), in, buf); err != nil {
		w.Close()
		return &pathErr{"put", remote, err}
	}
	if err := w.Close(); err != nil {
		return &pathErr{"put", remote, err}
	}
	return nil
}

func localErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errs.E(errs.NotFound)
	case errors.Is(err, fs.ErrPermission):
		return errs.E(errs.Permission)
	case errors.Is(err, fs.ErrExist):
		return errs.E(errs.Exist)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// copyOut streams remote into w.
func (e *env) copyOut(op, remote string, w io.Writer) error {
	r, err := e.cl.Open(e.ctx, remote)
	if err != nil {
		return &pathErr{op, remote, err}
	}
	defer r.Close()
	size := r.Size()
	bufSize := int64(4 << 20)
	if locs := r.Locations(); len(locs.Blocks) > 0 {
		bufSize = min(bufSize, max(int64(locs.Blocks[0].Block.Length), 64<<10))
	}
	if _, err := io.CopyBuffer(io.MultiWriter(w, e.bar(size, op+" "+remote)), io.LimitReader(r, size), make([]byte, bufSize)); err != nil {
		return &pathErr{op, remote, err}
	}
	return nil
}

func cmdGet(e *env, _ *flag.FlagSet, args []string) error {
	remote, local := args[0], args[1]
	if err := checkPath("get", remote); err != nil {
		return err
	}
	if st, err := e.cl.Stat(e.ctx, remote); err != nil {
		return &pathErr{"get", remote, err}
	} else if st.IsDir {
		return &pathErr{"get", remote, errs.E(errs.IsDir)}
	}
	if local == "-" {
		return e.copyOut("get", remote, e.stdout)
	}
	if st, err := os.Stat(local); err == nil && st.IsDir() {
		local = filepath.Join(local, path.Base(remote))
	}
	// Write beside the target and rename, so a failed get leaves no
	// half-written file behind.
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".dfs-*")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Not the file: the local directory it would go in.
			return &pathErr{"get", local, fmt.Errorf("local directory %s does not exist", filepath.Dir(local))}
		}
		return &pathErr{"get", local, localErr(err)}
	}
	defer os.Remove(tmp.Name())
	if err := e.copyOut("get", remote, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return &pathErr{"get", local, err}
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return &pathErr{"get", local, err}
	}
	if err := os.Rename(tmp.Name(), local); err != nil {
		return &pathErr{"get", local, localErr(err)}
	}
	return nil
}

func cmdCat(e *env, _ *flag.FlagSet, args []string) error {
	for _, p := range args {
		if err := checkPath("cat", p); err != nil {
			e.fail(err)
			continue
		}
		if st, err := e.cl.Stat(e.ctx, p); err != nil {
			e.fail(&pathErr{"cat", p, err})
			continue
		} else if st.IsDir {
			e.fail(&pathErr{"cat", p, errs.E(errs.IsDir)})
			continue
		}
		if err := e.copyOut("cat", p, e.stdout); err != nil {
			e.fail(err)
		}
	}
	return nil
}

func cmdRm(e *env, fs *flag.FlagSet, args []string) error {
	recursive := flagBool(fs, "r")
	for _, p := range args {
		if err := checkPath("rm", p); err != nil {
			e.fail(err)
			continue
		}
		if p == "/" {
			e.fail(&pathErr{"rm", p, errs.New(errs.Invalid, "", "", "refusing to remove the root")})
			continue
		}
		// Stat first: a missing path is an error, as with rm(1).
		st, err := e.cl.Stat(e.ctx, p)
		if err == nil && st.IsDir && !recursive {
			err = errs.New(errs.IsDir, "", "", "is a directory (use rm -r)")
		}
		var dst string
		if err == nil && !flagBool(fs, "skipTrash") {
			// "" with no error: no trash, or p is in it already; then
			// the delete below is for good, as HDFS's rm does.
			if dst, err = e.cl.MoveToTrash(e.ctx, path.Clean(p)); err == nil && dst != "" {
				fmt.Fprintf(e.stdout, "Moved: '%s' to trash at: %s\n", p, dst)
			}
		}
		if err == nil && dst == "" {
			err = e.cl.Delete(e.ctx, p, recursive)
		}
		if err != nil {
			e.fail(&pathErr{"rm", p, err})
		}
	}
	return nil
}

func cmdExpunge(e *env, _ *flag.FlagSet, _ []string) error {
	n, err := e.cl.Expunge(e.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Deleted %d expired trash checkpoints\n", n)
	return nil
}

func cmdMv(e *env, _ *flag.FlagSet, args []string) error {
	for _, p := range args {
		if err := checkPath("mv", p); err != nil {
			return err
		}
	}
	if err := e.cl.Rename(e.ctx, args[0], args[1]); err != nil {
		return &pathErr{"mv", args[0], err}
	}
	return nil
}

// checksumJSON is one file's checksum in --json output.
type checksumJSON struct {
	Path      string `json:"path"`
	Algorithm string `json:"algorithm"` // COMPOSITE-CRC32C
	Checksum  string `json:"checksum"`  // 8 hex digits (-hdfs: Hadoop's 28 bytes in hex)
	Length    uint64 `json:"length"`
}

// cmdChecksum prints each file's checksum the way `hdfs dfs -checksum`
// does: PATH, the algorithm and the checksum in hex, tab-separated. The
// namenode's block CRCs are combined; no byte of the file is read.
func cmdChecksum(e *env, fs *flag.FlagSet, args []string) error {
	all := []checksumJSON{}
	for _, p := range args {
		if err := checkPath("checksum", p); err != nil {
			e.fail(err)
			continue
		}
		if flagBool(fs, "hdfs") {
			sum, err := e.cl.HDFSFileChecksum(e.ctx, p)
			if err != nil {
				e.fail(&pathErr{"checksum", p, err})
				continue
			}
			j := checksumJSON{Path: p, Algorithm: sum.Algorithm, Checksum: fmt.Sprintf("%x", sum.Bytes), Length: sum.Length}
			if e.json {
				all = append(all, j)
			} else {
				fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", j.Path, j.Algorithm, j.Checksum)
			}
			continue
		}
		sum, err := e.cl.FileChecksum(e.ctx, p)
		if err != nil {
			e.fail(&pathErr{"checksum", p, err})
			continue
		}
		j := checksumJSON{Path: p, Algorithm: sum.Algorithm, Checksum: fmt.Sprintf("%08x", sum.CRC), Length: sum.Length}
		if e.json {
			all = append(all, j)
			continue
		}
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", j.Path, j.Algorithm, j.Checksum)
	}
	if e.json {
		return e.printJSON(all)
	}
	return nil
}

func cmdStat(e *env, _ *flag.FlagSet, args []string) error {
	var all []fileJSON
	for _, p := range args {
		if err := checkPath("stat", p); err != nil {
			e.fail(err)
			continue
		}
		st, err := e.cl.Stat(e.ctx, p)
		if err != nil {
			e.fail(&pathErr{"stat", p, err})
			continue
		}
		j := toJSON(st)
		if e.json {
			all = append(all, j)
			continue
		}
		tw := e.table()
		fmt.Fprintf(tw, "path:\t%s\n", j.Path)
		fmt.Fprintf(tw, "type:\t%s\n", j.Type)
		fmt.Fprintf(tw, "inode:\t%d\n", j.InodeID)
		fmt.Fprintf(tw, "mode:\t%s (%s)\n", j.Mode, j.Perm)
		fmt.Fprintf(tw, "owner:\t%s\n", j.Owner)
		fmt.Fprintf(tw, "group:\t%s\n", j.Group)
		fmt.Fprintf(tw, "mtime:\t%s\n", mtime(st).Local().Format(time.RFC3339))
		fmt.Fprintf(tw, "atime:\t%s\n", time.UnixMilli(st.AtimeUnixMs).Local().Format(time.RFC3339))
		if st.IsDir {
			fmt.Fprintf(tw, "children:\t%d\n", st.Children)
		} else {
			fmt.Fprintf(tw, "length:\t%d\n", st.Length)
			fmt.Fprintf(tw, "blocks:\t%d\n", st.Blocks)
			fmt.Fprintf(tw, "block size:\t%d\n", st.BlockSize)
			fmt.Fprintf(tw, "replication:\t%d\n", st.Replication)
			fmt.Fprintf(tw, "under construction:\t%v\n", st.UnderConstruction)
		}
		tw.Flush()
	}
	if e.json {
		if all == nil {
			all = []fileJSON{}
		}
		return e.printJSON(all)
	}
	return nil
}

func cmdChmod(e *env, _ *flag.FlagSet, args []string) error {
	mode, err := strconv.ParseUint(args[0], 8, 32)
	if err != nil || mode > 01777 {
		return usageErr{fmt.Sprintf("mode %q: want octal permission bits 0..1777", args[0])}
	}
	for _, p := range args[1:] {
		if err := checkPath("chmod", p); err != nil {
			e.fail(err)
			continue
		}
		if err := e.cl.SetPermission(e.ctx, p, uint32(mode)); err != nil {
			e.fail(&pathErr{"chmod", p, err})
		}
	}
	return nil
}

func cmdChown(e *env, _ *flag.FlagSet, args []string) error {
	owner, group, _ := strings.Cut(args[0], ":")
	if owner == "" && group == "" {
		return usageErr{fmt.Sprintf("owner %q: want OWNER, OWNER:GROUP or :GROUP", args[0])}
	}
	for _, p := range args[1:] {
		if err := checkPath("chown", p); err != nil {
			e.fail(err)
			continue
		}
		if err := e.cl.SetOwner(e.ctx, p, owner, group); err != nil {
			e.fail(&pathErr{"chown", p, err})
		}
	}
	return nil
}
