package main

import (
	"flag"
	"fmt"
	"time"
)

// The HDFS snapshot commands (rows of the commands table, main.go), after
// hdfs dfs -createSnapshot, -deleteSnapshot, -renameSnapshot, hdfs
// lsSnapshottableDir and hdfs dfsadmin -allowSnapshot, -disallowSnapshot
// (dfs admin allowSnapshot|disallowSnapshot, admin.go). A snapshot's files
// are read with the other commands under DIR/.snapshot/NAME.

// cmdCreateSnapshot runs createSnapshot DIR [NAME] and prints the
// snapshot's path as HDFS does.
func cmdCreateSnapshot(e *env, _ *flag.FlagSet, args []string) error {
	name := ""
	if len(args) == 2 {
		name = args[1]
	}
	if err := checkPath("createSnapshot", args[0]); err != nil {
		return err
	}
	p, err := e.cl.CreateSnapshot(e.ctx, args[0], name)
	if err != nil {
		return &pathErr{"createSnapshot", args[0], err}
	}
	if e.json {
		return e.printJSON(map[string]string{"Path": p})
	}
	fmt.Fprintf(e.stdout, "Created snapshot %s\n", p)
	return nil
}

// cmdDeleteSnapshot runs deleteSnapshot DIR NAME.
func cmdDeleteSnapshot(e *env, _ *flag.FlagSet, args []string) error {
	if err := checkPath("deleteSnapshot", args[0]); err != nil {
		return err
	}
	if err := e.cl.DeleteSnapshot(e.ctx, args[0], args[1]); err != nil {
		return &pathErr{"deleteSnapshot", args[0], err}
	}
	return nil
}

// cmdRenameSnapshot runs renameSnapshot DIR OLD NEW.
func cmdRenameSnapshot(e *env, _ *flag.FlagSet, args []string) error {
	if err := checkPath("renameSnapshot", args[0]); err != nil {
		return err
	}
	if err := e.cl.RenameSnapshot(e.ctx, args[0], args[1], args[2]); err != nil {
		return &pathErr{"renameSnapshot", args[0], err}
	}
	return nil
}

// cmdLsSnapshottableDir lists the snapshottable directories the user
// owns (a superuser: all) in HDFS's columns: mode, replication (0), owner,
// group, length (0), modification time, snapshots, snapshot limit, path.
func cmdLsSnapshottableDir(e *env, _ *flag.FlagSet, _ []string) error {
	dirs, err := e.cl.SnapshottableDirs(e.ctx)
	if err != nil {
		return &pathErr{"lsSnapshottableDir", "", err}
	}
	if e.json {
		return e.printJSON(dirs)
	}
	w := e.table()
	for _, d := range dirs {
		st := d.Status
		fmt.Fprintf(w, "%s\t0\t%s\t%s\t0\t%s\t%d\t%d\t%s\n", permString(st), st.Owner, st.Group,
			time.UnixMilli(st.MtimeUnixMs).UTC().Format("2006-01-02 15:04"), d.SnapshotCount, d.SnapshotLimit, st.Path)
	}
	return w.Flush()
}

// snapshottable runs dfs admin allowSnapshot|disallowSnapshot DIR...
func snapshottable(e *env, sub string, dirs []string) error {
	if len(dirs) == 0 {
		return usageErr{fmt.Sprintf("admin %s wants one or more directories", sub)}
	}
	for _, p := range dirs {
		if err := checkPath("admin "+sub, p); err != nil {
			e.fail(err)
			continue
		}
		var err error
		if sub == "allowSnapshot" {
			err = e.cl.AllowSnapshot(e.ctx, p)
		} else {
			err = e.cl.DisallowSnapshot(e.ctx, p)
		}
		if err != nil {
			e.fail(&pathErr{"admin " + sub, p, err})
			continue
		}
		if !e.json {
			verb := map[string]string{"allowSnapshot": "Allowing", "disallowSnapshot": "Disallowing"}[sub]
			fmt.Fprintf(e.stdout, "%s snapshot on %s succeeded\n", verb, p)
		}
	}
	return nil
}
