package main

import (
	"flag"
	"fmt"
)

// cmdRecoverLease recovers the lease of files some client left open (as
// hdfs debug recoverLease): the namenode has each file's last block cut
// to the length all its replicas hold and closes the file. It waits for
// the file to be closed unless -nowait is given.
func cmdRecoverLease(e *env, fs *flag.FlagSet, args []string) error {
	const op = "recover-lease"
	for _, p := range args {
		if err := checkPath(op, p); err != nil {
			e.fail(err)
			continue
		}
		closed, err := e.cl.RecoverLease(e.ctx, p)
		if err != nil {
			e.fail(&pathErr{op, p, err})
			continue
		}
		state := "closed"
		if !closed {
			state = "recovery started"
			if !flagBool(fs, "nowait") {
				if err := e.cl.WaitClosed(e.ctx, p); err != nil {
					e.fail(&pathErr{op, p, err})
					continue
				}
				state = "recovered and closed"
			}
		}
		fmt.Fprintf(e.stdout, "%s\t%s\n", p, state)
	}
	return nil
}
