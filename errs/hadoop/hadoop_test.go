package hadoop_test

import (
	"errors"
	"testing"
	"time"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/errs/hadoop"
)

// TestFor: each kind (and each exception the core names in a message)
// maps to Hadoop's class and HDFS's wording.
func TestFor(t *testing.T) {
	cases := []struct {
		name      string
		op, path  string
		err       error
		class     string
		message   string
		shortName string
	}{
		{"missing file", "", "", errs.New(errs.NotFound, "GetFileInfo", "/a/b", "no such file or directory"),
			hadoop.FileNotFound, "File does not exist: /a/b", "FileNotFoundException"},
		{"missing, path from the door", "OPEN", "/x", errs.New(errs.NotFound, "", "", "gone"),
			hadoop.FileNotFound, "File does not exist: /x", "FileNotFoundException"},
		{"missing, not a path", "", "", errs.New(errs.NotFound, "RecoverLease", "", "inode 7 not found"),
			hadoop.FileNotFound, "inode 7 not found", "FileNotFoundException"},
		{"read of a directory", "", "", errs.New(errs.IsDir, "GetBlockLocations", "/d", "path is a directory"),
			hadoop.FileNotFound, "Path is not a file: /d", "FileNotFoundException"},
		{"create over a directory", "", "", errs.New(errs.IsDir, "Create", "/d", "path is a directory"),
			hadoop.FileAlreadyExists, "/d already exists as a directory", "FileAlreadyExistsException"},
		{"create over a file", "", "", errs.New(errs.Exist, "Create", "/f", "file already exists"),
			hadoop.FileAlreadyExists, "/f already exists", "FileAlreadyExistsException"},
		{"rename over a file", "", "", errs.New(errs.Exist, "Rename", "/a", "destination /b is an existing file"),
			hadoop.FileAlreadyExists, "rename destination /b already exists", "FileAlreadyExistsException"},
		{"non-empty directory", "", "", errs.New(errs.NotEmpty, "Delete", "/d", "directory has 2 children and recursive is not set"),
			hadoop.NotEmptyDir, "`/d is non empty': Directory is not empty", "PathIsNotEmptyDirectoryException"},
		{"parent is a file", "", "", errs.New(errs.NotDir, "Mkdirs", "/f/x", "/f is a file, not a directory"),
			hadoop.ParentNotDir, "Parent path is not a directory: /f", "ParentNotDirectoryException"},
		{"rename under a file", "", "", errs.New(errs.NotDir, "Rename", "/a", "destination parent /f is a file, not a directory"),
			hadoop.ParentNotDir, "Parent path is not a directory: /f", "ParentNotDirectoryException"},
		{"permission", "", "", errs.New(errs.Permission, "Mkdirs", "/a/x", `user=eve access=-w- inode="/a":root:supergroup:drwxr-xr-x (parent needs w)`),
			hadoop.AccessControl, `Permission denied: user=eve, access=WRITE, inode="/a":root:supergroup:drwxr-xr-x (parent needs w)`, "AccessControlException"},
		{"permission, two bits", "", "", errs.New(errs.Permission, "Delete", "/a/f", `user=eve access=-wx inode="/a":root:supergroup:drwxr-xr-x (x)`),
			hadoop.AccessControl, `Permission denied: user=eve, access=WRITE_EXECUTE, inode="/a":root:supergroup:drwxr-xr-x (x)`, "AccessControlException"},
		{"permission, owner", "", "", errs.New(errs.Permission, "SetPermission", "/a/f", `user=eve access=owner inode="/a/f":root:g:-rw-r--r-- (only the owner)`),
			hadoop.AccessControl, `Permission denied: user=eve, access=owner, inode="/a/f":root:g:-rw-r--r-- (only the owner)`, "AccessControlException"},
		{"superuser only", "", "", errs.New(errs.Permission, "SetQuota", "/a", "Access denied for user eve. Superuser privilege is required"),
			hadoop.AccessControl, "Access denied for user eve. Superuser privilege is required", "AccessControlException"},
		{"namespace quota", "", "", errs.New(errs.Exhausted, "Mkdirs", "/q/x", "NSQuotaExceededException: The NameSpace quota (directories and files) of directory /q is exceeded: quota=1 file count=2"),
			hadoop.NSQuotaExceeded, "The NameSpace quota (directories and files) of directory /q is exceeded: quota=1 file count=2", "NSQuotaExceededException"},
		{"space quota", "", "", errs.New(errs.Exhausted, "AddBlock", "/q/f", "DSQuotaExceededException: The DiskSpace quota of /q is exceeded: quota = 10 B but diskspace consumed = 20 B"),
			hadoop.DSQuotaExceeded, "The DiskSpace quota of /q is exceeded: quota = 10 B but diskspace consumed = 20 B", "DSQuotaExceededException"},
		{"backed off", "", "", &errs.Error{Kind: errs.Exhausted, Op: "Mkdirs", Msg: "alice is backed off", RetryAfter: time.Second},
			hadoop.Retriable, "alice is backed off", "RetriableException"},
		{"exhausted without a hint", "", "", errs.New(errs.Exhausted, "Complete", "/f", "too many waits"),
			hadoop.IOException, "too many waits", "IOException"},
		{"safe mode", "", "", errs.New(errs.Precondition, "Mkdirs", "", "SafeModeException: Cannot Mkdirs. Name node is in safe mode. 3 blocks"),
			hadoop.Retriable, hadoop.SafeMode + ": Cannot Mkdirs. Name node is in safe mode. 3 blocks", "RetriableException"},
		{"being written", "", "", errs.New(errs.Precondition, "Create", "/f", "AlreadyBeingCreated: Failed to CREATE_FILE /f for user b because this file lease is currently owned by user a on another client"),
			hadoop.AlreadyBeingCreated, "Failed to CREATE_FILE /f for user b because this file lease is currently owned by user a on another client", "AlreadyBeingCreatedException"},
		{"recovery running", "", "", errs.New(errs.Precondition, "Create", "/f", "RecoveryInProgress: Failed to CREATE_FILE /f for user b because lease recovery is in progress. Try again later."),
			hadoop.RecoveryInProgress, "Failed to CREATE_FILE /f for user b because lease recovery is in progress. Try again later.", "RecoveryInProgressException"},
		{"no lease", "", "", errs.New(errs.Precondition, "AddBlock", "/f", "LeaseExpired: No lease on /f"),
			hadoop.LeaseExpired, "No lease on /f", "LeaseExpiredException"},
		{"append's other refusals", "", "", errs.New(errs.Precondition, "Append", "/f", "not appendable"),
			hadoop.AlreadyBeingCreated, "Failed to APPEND_FILE /f because not appendable", "AlreadyBeingCreatedException"},
		{"other precondition", "", "", errs.New(errs.Precondition, "Complete", "/f", "wrong blocks"),
			hadoop.IOException, "wrong blocks", "IOException"},
		{"follower", "", "", errs.New(errs.NotLeader, "Mkdirs", "/a", "not leader"),
			hadoop.Standby, "Operation category WRITE is not supported in state standby", "StandbyException"},
		{"follower, a read", "", "", errs.New(errs.NotLeader, "GetFileInfo", "/a", "not leader"),
			hadoop.Standby, "Operation category READ is not supported in state standby", "StandbyException"},
		{"no leader", "", "", errs.New(errs.Unavailable, "Mkdirs", "", "no leader"), hadoop.Retriable, "no leader", "RetriableException"},
		{"bad argument", "", "", errs.New(errs.Invalid, "Create", "/f", "block size 1 is too small"), hadoop.IllegalArgument, "block size 1 is too small", "IllegalArgumentException"},
		{"no identity", "", "", errs.New(errs.Unauthenticated, "authenticate", "", "no user"), hadoop.Security, "no user", "SecurityException"},
		{"checksum", "", "", errs.New(errs.Corrupt, "Read", "/f", "bad chunk"), hadoop.Checksum, "bad chunk", "ChecksumException"},
		{"wrapped cause", "", "", errs.Wrap(errs.IO, "Create", "/f", errors.New("disk")), hadoop.IOException, "I/O error: disk", "IOException"},
		{"not ours", "", "", errors.New("boom"), hadoop.Runtime, "boom", "RuntimeException"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := hadoop.For(c.op, c.path, c.err)
			if ex.Class != c.class || ex.Message != c.message || ex.Name() != c.shortName {
				t.Errorf("got %s (%s) %q, want %s %q", ex.Class, ex.Name(), ex.Message, c.class, c.message)
			}
		})
	}
}

// TestForSurvivesGRPC: the same exception after the error crossed gRPC
// (its op and path ride in the trailer).
func TestForSurvivesGRPC(t *testing.T) {
	e := errs.New(errs.NotFound, "GetFileInfo", "/a/b", "no such file or directory: /a does not exist")
	back := errs.FromStatus(errs.ToStatus(e), errs.Trailer(e))
	if got := hadoop.For("", "", back); got.Message != "File does not exist: /a/b" {
		t.Fatalf("after gRPC: %q", got.Message)
	}
}
