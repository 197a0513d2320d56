package webhdfs

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// Exception is one Hadoop exception: the short name clients switch on
// (fsspec and Hadoop's WebHdfsFileSystem read "exception"), its Java class
// and the HTTP status Hadoop's WebHDFS answers it with.
type Exception struct {
	Name   string
	Class  string
	Status int
}

// The exceptions blockfs answers with. Hadoop's rule: FileNotFoundException
// is 404, SecurityException and every other IOException 403,
// IllegalArgumentException and UnsupportedOperationException 400, anything
// else 500. Two are blockfs's own choices: no identity at all is 401 (as
// Hadoop's authentication filter answers), and a namenode without a leader
// is 503 so that curl users see a retryable status.
var (
	FileNotFound      = Exception{"FileNotFoundException", "java.io.FileNotFoundException", http.StatusNotFound}
	AccessControl     = Exception{"AccessControlException", "org.apache.hadoop.security.AccessControlException", http.StatusForbidden}
	FileAlreadyExists = Exception{"FileAlreadyExistsException", "org.apache.hadoop.fs.FileAlreadyExistsException", http.StatusForbidden}
	NotEmptyDir       = Exception{"PathIsNotEmptyDirectoryException", "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException", http.StatusForbidden}
	ParentNotDir      = Exception{"ParentNotDirectoryException", "org.apache.hadoop.fs.ParentNotDirectoryException", http.StatusForbidden}
	IllegalArgument   = Exception{"IllegalArgumentException", "java.lang.IllegalArgumentException", http.StatusBadRequest}
	InvalidPath       = Exception{"InvalidPathException", "org.apache.hadoop.fs.InvalidPathException", http.StatusBadRequest}
	Unsupported       = Exception{"UnsupportedOperationException", "java.lang.UnsupportedOperationException", http.StatusBadRequest}
	Security          = Exception{"SecurityException", "java.lang.SecurityException", http.StatusUnauthorized}
	InvalidToken      = Exception{"InvalidToken", "org.apache.hadoop.security.token.SecretManager$InvalidToken", http.StatusForbidden}
	EOF               = Exception{"EOFException", "java.io.EOFException", http.StatusForbidden}
	Checksum          = Exception{"ChecksumException", "org.apache.hadoop.fs.ChecksumException", http.StatusForbidden}
	IOError           = Exception{"IOException", "java.io.IOException", http.StatusForbidden}
	// AlreadyBeingCreated is HDFS's answer to an APPEND (or CREATE) of a
	// file another client holds open for writing: an IOException, so 403.
	AlreadyBeingCreated = Exception{"AlreadyBeingCreatedException", "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException", http.StatusForbidden}
	// NSQuotaExceeded and DSQuotaExceeded are HDFS's QuotaExceededExceptions,
	// IOExceptions: 403, as Hadoop's ExceptionHandler answers every
	// IOException it does not name (only FileNotFoundException is 404).
	NSQuotaExceeded = Exception{"NSQuotaExceededException", "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException", http.StatusForbidden}
	DSQuotaExceeded = Exception{"DSQuotaExceededException", "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException", http.StatusForbidden}
	Retriable       = Exception{"RetriableException", "org.apache.hadoop.ipc.RetriableException", http.StatusServiceUnavailable}
	// SafeMode is a write refused by a namenode in safe mode: HDFS's
	// namenode wraps its SafeModeException in a RetriableException, which
	// WebHDFS answers 403 like the IOException it is.
	SafeMode = Exception{"RetriableException", "org.apache.hadoop.ipc.RetriableException", http.StatusForbidden}
	Runtime  = Exception{"RuntimeException", "java.lang.RuntimeException", http.StatusInternalServerError}
	// SnapshotAccessControl is a write under a .snapshot path, and
	// Snapshot a snapshot operation the directory's state refuses (not
	// snapshottable, has snapshots, nested): HDFS's exceptions, IOExceptions.
	SnapshotAccessControl = Exception{"SnapshotAccessControlException", "org.apache.hadoop.hdfs.protocol.SnapshotAccessControlException", http.StatusForbidden}
	Snapshot              = Exception{"SnapshotException", "org.apache.hadoop.hdfs.protocol.SnapshotException", http.StatusForbidden}
)

// Error is an error to answer with a specific exception (an unknown op,
// a bad parameter, an unsupported operation, a bad redirect token); any
// other error is answered by its errs kind (ExceptionFor).
type Error struct {
	Ex  Exception
	Msg string
	Err error // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with exception ex.
func Errorf(ex Exception, msg string) *Error { return &Error{Ex: ex, Msg: msg} }

// ExceptionFor names the exception err is answered with: the one an
// *Error carries, else the one of its errs kind.
func ExceptionFor(err error) Exception {
	var we *Error
	if errors.As(err, &we) {
		return we.Ex
	}
	switch errs.KindOf(err) {
	case errs.NotFound, errs.IsDir:
		return FileNotFound
	case errs.Exist:
		return FileAlreadyExists
	case errs.NotEmpty:
		return NotEmptyDir
	case errs.NotDir:
		return ParentNotDir
	case errs.Invalid:
		return IllegalArgument
	case errs.Permission:
		if strings.Contains(err.Error(), namespace.ReadOnlySnapshot) {
			return SnapshotAccessControl
		}
		return AccessControl
	case errs.Unauthenticated:
		return Security
	case errs.Corrupt:
		return Checksum
	case errs.Unavailable, errs.NotLeader, errs.Timeout:
		return Retriable
	case errs.Exhausted:
		// The namespace names the quota exception in its message
		// (namespace.NSQuotaExceeded, DSQuotaExceeded).
		switch msg := err.Error(); {
		case strings.Contains(msg, NSQuotaExceeded.Name):
			return NSQuotaExceeded
		case strings.Contains(msg, DSQuotaExceeded.Name):
			return DSQuotaExceeded
		}
		return IOError
	case errs.Precondition:
		if errs.IsSafeMode(err) {
			return SafeMode
		}
		if strings.Contains(err.Error(), "snapshot") {
			return Snapshot // namespace/hsnap.go: every refusal of its own names snapshots
		}
		return IOError
	case errs.IO, errs.Canceled:
		return IOError
	}
	return Runtime
}

// AppendError is the error to answer a refused Append with: a file being
// written (errs.Precondition) is AlreadyBeingCreatedException, as HDFS
// answers it; anything else is answered by its kind.
func AppendError(err error) error {
	if errs.KindOf(err) == errs.Precondition {
		return &Error{Ex: AlreadyBeingCreated, Msg: "failed to append", Err: err}
	}
	return err
}

// CreateError is the error to answer a refused Create with: a directory
// of that name (errs.IsDir) is FileAlreadyExistsException, as HDFS answers
// it (where a read of a directory is FileNotFoundException); anything else
// is answered by its kind.
func CreateError(err error) error {
	if errs.KindOf(err) == errs.IsDir {
		return &Error{Ex: FileAlreadyExists, Msg: "a directory of that name exists", Err: err}
	}
	return err
}

// remoteException is Hadoop's error body:
// {"RemoteException":{"exception":..,"javaClassName":..,"message":..}}.
type remoteException struct {
	RemoteException struct {
		Exception     string `json:"exception"`
		JavaClassName string `json:"javaClassName"`
		Message       string `json:"message"`
	}
}

// WriteError answers err as a RemoteException with its exception's status.
func WriteError(w http.ResponseWriter, err error) {
	ex := ExceptionFor(err)
	var body remoteException
	body.RemoteException.Exception = ex.Name
	body.RemoteException.JavaClassName = ex.Class
	body.RemoteException.Message = err.Error()
	WriteJSON(w, ex.Status, body)
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"RemoteException":{"exception":"RuntimeException","javaClassName":"java.lang.RuntimeException","message":"cannot encode the answer"}}`)
	}
	WriteRaw(w, status, b)
}

// WriteRaw answers b, a JSON document, with status.
func WriteRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}
