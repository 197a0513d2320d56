// Package hadoop is the one mapping from a blockfs error to the Hadoop
// exception an HDFS client expects in its place: the Java class name and
// the message, worded as HDFS words it ("File does not exist: /a"), since
// clients that see only the message (the npm webhdfs client, scripts)
// match on the words. Every door that speaks Hadoop's protocols answers
// with it: WebHDFS's RemoteException body today, Hadoop IPC's
// RpcResponseHeaderProto (exceptionClassName, errorMsg) later.
//
// The mapping is by the error's errs.Kind, refined by the operation and,
// for the kinds that cover several Hadoop exceptions (a quota, safe mode,
// a file another client writes), by the Hadoop exception name the core
// puts at the start of its message ("NSQuotaExceededException: ...",
// "AlreadyBeingCreated: ..."). It imports errs only.
package hadoop

import (
	"errors"
	"strings"

	"github.com/blockfs/blockfs/errs"
)

// The Java classes of the exceptions blockfs answers with.
const (
	FileNotFound        = "java.io.FileNotFoundException"
	AccessControl       = "org.apache.hadoop.security.AccessControlException"
	FileAlreadyExists   = "org.apache.hadoop.fs.FileAlreadyExistsException"
	NotEmptyDir         = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"
	ParentNotDir        = "org.apache.hadoop.fs.ParentNotDirectoryException"
	AlreadyBeingCreated = "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException"
	RecoveryInProgress  = "org.apache.hadoop.hdfs.protocol.RecoveryInProgressException"
	LeaseExpired        = "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException"
	SafeMode            = "org.apache.hadoop.hdfs.server.namenode.SafeModeException"
	NSQuotaExceeded     = "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"
	DSQuotaExceeded     = "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException"
	Standby             = "org.apache.hadoop.ipc.StandbyException"
	Retriable           = "org.apache.hadoop.ipc.RetriableException"
	IllegalArgument     = "java.lang.IllegalArgumentException"
	Security            = "java.lang.SecurityException"
	Checksum            = "org.apache.hadoop.fs.ChecksumException"
	IOException         = "java.io.IOException"
	Runtime             = "java.lang.RuntimeException"
	// A write under a .snapshot path, and a snapshot operation the
	// directory's state refuses (not snapshottable, has snapshots, nested).
	SnapshotAccessControl = "org.apache.hadoop.hdfs.protocol.SnapshotAccessControlException"
	Snapshot              = "org.apache.hadoop.hdfs.protocol.SnapshotException"
)

// readOnlySnapshot is the namespace's refusal of a write under a .snapshot
// path (namespace.ReadOnlySnapshot), as HDFS words it.
const readOnlySnapshot = "Modification on a read-only snapshot is disallowed"

// Exception is one Hadoop exception: its Java class and its message.
type Exception struct {
	Class   string
	Message string
}

// Name is the class's simple name ("FileNotFoundException"), what
// WebHDFS's "exception" field and most clients switch on.
func (e Exception) Name() string { return Name(e.Class) }

// Name is the simple name of Java class class.
func Name(class string) string {
	if i := strings.LastIndexAny(class, ".$"); i >= 0 {
		return class[i+1:]
	}
	return class
}

// For maps err, raised by operation op on path (the door's request; used
// when err names no path of its own), to its Hadoop exception. op is the
// blockfs operation ("Create", "Append", "GetFileInfo") or the WebHDFS one
// ("CREATE"), in any case; "" takes err's own Op.
func For(op, path string, err error) Exception {
	e := detailOf(err)
	if e.path == "" {
		e.path = path
	}
	if op == "" {
		op = e.op
	}
	p, d := e.path, e.msg
	switch errs.KindOf(err) {
	case errs.NotFound:
		if strings.HasPrefix(d, "At least one of the attributes") || strings.HasPrefix(d, "No matching attributes") {
			return Exception{IOException, d} // a missing xattr, not a missing file: HDFS's IOException
		}
		if p == "" || !strings.HasPrefix(p, "/") {
			return Exception{FileNotFound, d}
		}
		return Exception{FileNotFound, "File does not exist: " + p}
	case errs.IsDir:
		if strings.EqualFold(op, "Create") { // a read or an append of a directory: not a file
			return Exception{FileAlreadyExists, p + " already exists as a directory"}
		}
		return Exception{FileNotFound, "Path is not a file: " + p}
	case errs.Exist:
		if rest, ok := strings.CutPrefix(d, "destination "); ok {
			if dst, _, ok := strings.Cut(rest, " "); ok {
				return Exception{FileAlreadyExists, "rename destination " + dst + " already exists"}
			}
		}
		return Exception{FileAlreadyExists, p + " already exists"}
	case errs.NotEmpty:
		return Exception{NotEmptyDir, "`" + p + " is non empty': Directory is not empty"}
	case errs.NotDir:
		parent := p
		if i := strings.Index(d, " is a file, not a directory"); i > 0 {
			parent = d[:i]
			if j := strings.LastIndex(parent, " "); j >= 0 {
				parent = parent[j+1:]
			}
		}
		return Exception{ParentNotDir, "Parent path is not a directory: " + parent}
	case errs.Permission:
		if strings.Contains(d, readOnlySnapshot) {
			return Exception{SnapshotAccessControl, d}
		}
		return Exception{AccessControl, permissionDenied(d)}
	case errs.Unauthenticated:
		return Exception{Security, d}
	case errs.Invalid:
		return Exception{IllegalArgument, d}
	case errs.Corrupt:
		return Exception{Checksum, d}
	case errs.NotLeader:
		return Exception{Standby, "Operation category " + category(op) + " is not supported in state standby"}
	case errs.Unavailable, errs.Timeout:
		return Exception{Retriable, d}
	case errs.Exhausted:
		if m, ok := named(d, "NSQuotaExceededException"); ok {
			return Exception{NSQuotaExceeded, m}
		}
		if m, ok := named(d, "DSQuotaExceededException"); ok {
			return Exception{DSQuotaExceeded, m}
		}
		if errs.RetryAfter(err) > 0 {
			// A call backed off (a rate limit, the fair scheduler): Hadoop's
			// server-too-busy answer, which its clients retry.
			return Exception{Retriable, d}
		}
		return Exception{IOException, d}
	case errs.Precondition:
		return precondition(op, p, d)
	case errs.IO, errs.Canceled:
		return Exception{IOException, d}
	}
	return Exception{Runtime, d}
}

// precondition maps an errs.Precondition: safe mode and the lease
// refusals by the name the core gives them, the rest as IOException.
func precondition(op, p, d string) Exception {
	if m, ok := named(d, errs.SafeModeException); ok {
		// HDFS's namenode in HA wraps it so that clients retry; the
		// message is the wrapped exception's class and message.
		return Exception{Retriable, SafeMode + ": " + m}
	}
	if m, ok := named(d, "AlreadyBeingCreated"); ok {
		return Exception{AlreadyBeingCreated, m}
	}
	if m, ok := named(d, "RecoveryInProgress"); ok {
		return Exception{RecoveryInProgress, m}
	}
	if m, ok := named(d, "LeaseExpired"); ok {
		return Exception{LeaseExpired, m}
	}
	if strings.Contains(d, "snapshot") {
		return Exception{Snapshot, d} // namespace/hsnap.go: every refusal of its own names snapshots
	}
	if strings.EqualFold(op, "Append") {
		// Any other refusal of an append for the file's state is HDFS's
		// AlreadyBeingCreatedException too (the file is not appendable).
		return Exception{AlreadyBeingCreated, "Failed to APPEND_FILE " + p + " because " + d}
	}
	return Exception{IOException, d}
}

// LeaseOp is HDFS's name of the lease operation op attempts, as its
// lease refusals say it ("Failed to CREATE_FILE /a ...").
func LeaseOp(op string) string {
	switch strings.ToUpper(op) {
	case "CREATE":
		return "CREATE_FILE"
	case "APPEND":
		return "APPEND_FILE"
	case "TRUNCATE":
		return "TRUNCATE_FILE"
	case "RECOVERLEASE":
		return "RECOVER_LEASE"
	}
	return strings.ToUpper(op)
}

// category is HDFS's operation category of op for a StandbyException:
// READ for the reading calls, WRITE for the rest.
func category(op string) string {
	o := strings.ToUpper(op)
	for _, r := range []string{"GET", "LIST", "OPEN", "STAT", "CHECK"} {
		if strings.HasPrefix(o, r) {
			return "READ"
		}
	}
	return "WRITE"
}

// permissionDenied words an errs.Permission message as HDFS's
// AccessControlException does: "Permission denied: user=u, access=WRITE,
// inode=..." (blockfs's reason stays after it, in parentheses); a message
// not about an access check ("Access denied for user u. Superuser
// privilege is required") is HDFS's wording already.
func permissionDenied(d string) string {
	i := strings.Index(d, "user=")
	if i < 0 {
		return d
	}
	m := d[i:]
	if j := strings.Index(m, " access="); j >= 0 {
		rest := m[j+len(" access="):]
		a, tail, _ := strings.Cut(rest, " ")
		m = m[:j] + ", access=" + fsAction(a) + " " + tail
	}
	m = strings.Replace(m, " inode=", ", inode=", 1)
	return "Permission denied: " + m
}

// fsAction is HDFS's FsAction name of an access blockfs writes as ls
// does ("-wx" is WRITE_EXECUTE); anything else is kept.
func fsAction(a string) string {
	if len(a) != 3 || !strings.ContainsRune("r-", rune(a[0])) || !strings.ContainsRune("w-", rune(a[1])) || !strings.ContainsRune("x-", rune(a[2])) {
		return a
	}
	var parts []string
	for i, name := range []string{"READ", "WRITE", "EXECUTE"} {
		if a[i] != '-' {
			parts = append(parts, name)
		}
	}
	switch len(parts) {
	case 0:
		return "NONE"
	case 3:
		return "ALL"
	}
	return strings.Join(parts, "_")
}

// named returns what follows "name: " in d, the core's way of naming a
// Hadoop exception at the start of a message.
func named(d, name string) (string, bool) {
	i := strings.Index(d, name+": ")
	if i < 0 {
		return "", false
	}
	return d[i+len(name)+2:], true
}

// detail is an error's path and its message without the op and path.
type detail struct{ op, path, msg string }

// detailOf takes the first *errs.Error in err's chain apart; an error
// that is none is its message.
func detailOf(err error) detail {
	if err == nil {
		return detail{}
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		return detail{msg: err.Error()}
	}
	d := detail{op: e.Op, path: e.Path, msg: e.Msg}
	if d.msg == "" {
		d.msg = e.Kind.String()
	}
	if e.Err != nil {
		d.msg += ": " + e.Err.Error()
	}
	return d
}
