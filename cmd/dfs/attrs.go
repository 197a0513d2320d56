package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// Extended attributes, times and truncate, after hdfs dfs's -setfattr,
// -getfattr, -touch and -truncate.

func setfattrFlags(fs *flag.FlagSet) {
	fs.String("n", "", "the attribute's name, with its namespace (user.color)")
	fs.String("v", "", `its value: "text", 0x hex or 0s base64, else the text as given (default: empty)`)
	fs.String("x", "", "remove this attribute instead")
}

// cmdSetfattr sets (-n NAME [-v VALUE]) or removes (-x NAME) an
// attribute of each path.
func cmdSetfattr(e *env, fs *flag.FlagSet, args []string) error {
	name, remove := fs.Lookup("n").Value.String(), fs.Lookup("x").Value.String()
	if (name == "") == (remove == "") {
		return usageErr{"setfattr: give -n NAME [-v VALUE] or -x NAME"}
	}
	value, err := client.DecodeXAttrValue(fs.Lookup("v").Value.String())
	if err != nil {
		return usageErr{fmt.Sprintf("setfattr: -v: %v", err)}
	}
	for _, p := range args {
		if err := checkPath("setfattr", p); err != nil {
			e.fail(err)
			continue
		}
		if remove != "" {
			err = e.cl.RemoveXAttr(e.ctx, p, remove)
		} else {
			err = e.cl.SetXAttr(e.ctx, p, name, value, client.XAttrCreate|client.XAttrReplace)
		}
		if err != nil {
			e.fail(&pathErr{"setfattr", p, xattrErr(err)})
		}
	}
	return nil
}

// xattrErr says which attribute was missing or present, where describe
// would say only "not found" or "already exists" (as if of the path).
func xattrErr(err error) error {
	msg := err.Error()
	for _, m := range []string{namespace.MsgXAttrNotFound, namespace.MsgXAttrRemoveNotFound, "XAttr: "} {
		if i := strings.Index(msg, m); i >= 0 && (errs.Is(err, errs.NotFound) || errs.Is(err, errs.Exist)) {
			return errors.New(msg[i:])
		}
	}
	return err
}

func getfattrFlags(fs *flag.FlagSet) {
	fs.String("n", "", "the attribute to print")
	fs.Bool("d", false, "print every attribute")
	fs.String("e", "text", "encode values as text, hex or base64")
	fs.Bool("R", false, "recurse into directories")
}

// cmdGetfattr prints, for each path, "# file: PATH" and a NAME=VALUE
// line per attribute (-n NAME or -d), then a blank line, as hdfs dfs
// -getfattr does.
func cmdGetfattr(e *env, fs *flag.FlagSet, args []string) error {
	name, all, rec := fs.Lookup("n").Value.String(), flagBool(fs, "d"), flagBool(fs, "R")
	enc := fs.Lookup("e").Value.String()
	if (name == "") == !all {
		return usageErr{"getfattr: give -n NAME or -d"}
	}
	if enc != "text" && enc != "hex" && enc != "base64" {
		return usageErr{fmt.Sprintf("getfattr: -e %q: want text, hex or base64", enc)}
	}
	var show func(p string)
	show = func(p string) {
		var names []string
		if name != "" {
			names = []string{name}
		}
		xs, err := e.cl.GetXAttrs(e.ctx, p, names...)
		if err != nil {
			e.fail(&pathErr{"getfattr", p, xattrErr(err)})
			return
		}
		fmt.Fprintf(e.stdout, "# file: %s\n", p)
		for _, x := range xs {
			fmt.Fprintf(e.stdout, "%s=%s\n", x.Name, client.EncodeXAttrValue(x.Value, enc))
		}
		fmt.Fprintln(e.stdout)
		if !rec {
			return
		}
		for st, err := range e.cl.List(e.ctx, p) {
			if err != nil {
				e.fail(&pathErr{"getfattr", p, err})
				return
			}
			if st.Path != p {
				show(st.Path)
			}
		}
	}
	for _, p := range args {
		if err := checkPath("getfattr", p); err != nil {
			e.fail(err)
			continue
		}
		show(p)
	}
	return nil
}

func touchFlags(fs *flag.FlagSet) {
	fs.Bool("a", false, "change only the access time")
	fs.Bool("m", false, "change only the modification time")
	fs.Bool("c", false, "do not create missing files")
	fs.String("t", "", "use this time (yyyyMMdd:HHmmss, local time) instead of now")
}

// touchLayout is hdfs dfs -touch -t's format, yyyyMMdd:HHmmss.
const touchLayout = "20060102:150405"

// cmdTouch sets each path's times to now (or -t), creating an empty file
// where none is (unless -c), as hdfs dfs -touch does.
func cmdTouch(e *env, fs *flag.FlagSet, args []string) error {
	at := time.Now()
	if ts := fs.Lookup("t").Value.String(); ts != "" {
		var err error
		if at, err = time.ParseInLocation(touchLayout, ts, time.Local); err != nil {
			return usageErr{fmt.Sprintf("touch: -t %q: want yyyyMMdd:HHmmss", ts)}
		}
	}
	ms := at.UnixMilli()
	mt, atime := ms, ms
	switch a, m := flagBool(fs, "a"), flagBool(fs, "m"); {
	case a && !m:
		mt = -1
	case m && !a:
		atime = -1
	}
	for _, p := range args {
		if err := checkPath("touch", p); err != nil {
			e.fail(err)
			continue
		}
		err := e.cl.SetTimes(e.ctx, p, mt, atime)
		if errs.Is(err, errs.NotFound) && !flagBool(fs, "c") {
			if err = e.cl.WriteFile(e.ctx, p, nil, client.CreateOptions{NonRecursive: true}); err == nil {
				err = e.cl.SetTimes(e.ctx, p, mt, atime)
			}
		} else if errs.Is(err, errs.NotFound) {
			continue // -c: nothing to touch, and no error (as HDFS)
		}
		if err != nil {
			e.fail(&pathErr{"touch", p, err})
		}
	}
	return nil
}

// cmdTruncate cuts each file to LENGTH bytes, printing hdfs dfs
// -truncate's lines; -w waits for the block recovery a cut inside a block
// needs.
func cmdTruncate(e *env, fs *flag.FlagSet, args []string) error {
	n, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || n < 0 {
		return usageErr{fmt.Sprintf("truncate: length %q is not a non-negative integer", args[0])}
	}
	wait := flagBool(fs, "w")
	for _, p := range args[1:] {
		if err := checkPath("truncate", p); err != nil {
			e.fail(err)
			continue
		}
		done, err := e.cl.Truncate(e.ctx, p, n)
		if err != nil {
			e.fail(&pathErr{"truncate", p, err})
			continue
		}
		if !done && wait {
			fmt.Fprintf(e.stdout, "Waiting for %s ...\n", p)
			if err := e.cl.WaitClosed(e.ctx, p); err != nil {
				e.fail(&pathErr{"truncate", p, err})
				continue
			}
			done = true
		}
		if done {
			fmt.Fprintf(e.stdout, "Truncated %s to length: %d\n", p, n)
		} else {
			fmt.Fprintf(e.stdout, "Truncating %s to length: %d. Wait for block recovery to complete before further updating this file.\n", p, n)
		}
	}
	return nil
}
