package webhdfs

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/blockfs/blockfs/errs/hadoop"
)

// Exception is one Hadoop exception as WebHDFS answers it: the short name
// clients switch on (fsspec and Hadoop's WebHdfsFileSystem read
// "exception"), its Java class and the HTTP status Hadoop's WebHDFS
// answers it with.
type Exception struct {
	Name   string
	Class  string
	Status int
}

// The exceptions the door names itself (a bad parameter, an unsupported
// op, a bad redirect token); every other error is answered with the
// exception package errs/hadoop maps it to, and its message. Hadoop's
// rule for the status: FileNotFoundException is 404, SecurityException
// and every other IOException 403, IllegalArgumentException and
// UnsupportedOperationException 400, anything else 500. Two are
// blockfs's own choices: no identity at all is 401 (as Hadoop's
// authentication filter answers), and a namenode without a leader is 503
// so that curl users see a retryable status.
var (
	FileNotFound      = exception(hadoop.FileNotFound, http.StatusNotFound)
	AccessControl     = exception(hadoop.AccessControl, http.StatusForbidden)
	FileAlreadyExists = exception(hadoop.FileAlreadyExists, http.StatusForbidden)
	NotEmptyDir       = exception(hadoop.NotEmptyDir, http.StatusForbidden)
	ParentNotDir      = exception(hadoop.ParentNotDir, http.StatusForbidden)
	IllegalArgument   = exception(hadoop.IllegalArgument, http.StatusBadRequest)
	InvalidPath       = exception("org.apache.hadoop.fs.InvalidPathException", http.StatusBadRequest)
	Unsupported       = exception("java.lang.UnsupportedOperationException", http.StatusBadRequest)
	Security          = exception(hadoop.Security, http.StatusUnauthorized)
	InvalidToken      = exception("org.apache.hadoop.security.token.SecretManager$InvalidToken", http.StatusForbidden)
	EOF               = exception("java.io.EOFException", http.StatusForbidden)
	Checksum          = exception(hadoop.Checksum, http.StatusForbidden)
	IOError           = exception(hadoop.IOException, http.StatusForbidden)
	// AlreadyBeingCreated is HDFS's answer to an APPEND (or CREATE) of a
	// file another client holds open for writing: an IOException, so 403.
	AlreadyBeingCreated = exception(hadoop.AlreadyBeingCreated, http.StatusForbidden)
	RecoveryInProgress  = exception(hadoop.RecoveryInProgress, http.StatusForbidden)
	// NSQuotaExceeded and DSQuotaExceeded are HDFS's QuotaExceededExceptions,
	// IOExceptions: 403, as Hadoop's ExceptionHandler answers every
	// IOException it does not name (only FileNotFoundException is 404).
	NSQuotaExceeded = exception(hadoop.NSQuotaExceeded, http.StatusForbidden)
	DSQuotaExceeded = exception(hadoop.DSQuotaExceeded, http.StatusForbidden)
	Retriable       = exception(hadoop.Retriable, http.StatusServiceUnavailable)
	Standby         = exception(hadoop.Standby, http.StatusServiceUnavailable)
	// SafeMode is a write refused by a namenode in safe mode: HDFS's
	// namenode wraps its SafeModeException in a RetriableException, which
	// WebHDFS answers 403 like the IOException it is.
	SafeMode = exception(hadoop.Retriable, http.StatusForbidden)
	Runtime  = exception(hadoop.Runtime, http.StatusInternalServerError)
	// SnapshotAccessControl and Snapshot: HDFS's snapshot refusals,
	// IOExceptions.
	SnapshotAccessControl = exception(hadoop.SnapshotAccessControl, http.StatusForbidden)
	Snapshot              = exception(hadoop.Snapshot, http.StatusForbidden)
)

func exception(class string, status int) Exception {
	return Exception{Name: hadoop.Name(class), Class: class, Status: status}
}

// statusOf is the HTTP status of a mapped exception, by Hadoop's rule.
func statusOf(ex hadoop.Exception) int {
	switch ex.Class {
	case hadoop.FileNotFound:
		return http.StatusNotFound
	case hadoop.IllegalArgument:
		return http.StatusBadRequest
	case hadoop.Security:
		return http.StatusUnauthorized
	case hadoop.Standby:
		return http.StatusServiceUnavailable
	case hadoop.Retriable:
		if strings.HasPrefix(ex.Message, hadoop.SafeMode) {
			return http.StatusForbidden
		}
		return http.StatusServiceUnavailable
	case hadoop.Runtime:
		return http.StatusInternalServerError
	}
	return http.StatusForbidden // an IOException
}

// Error is an error to answer with a specific exception (an unknown op,
// a bad parameter, an unsupported operation, a bad redirect token); any
// other error is answered as errs/hadoop maps it (ExceptionFor).
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
// *Error carries, else the one errs/hadoop maps it to.
func ExceptionFor(err error) Exception {
	ex, _ := remoteAnswer(err)
	return ex
}

// remoteAnswer is the exception and message err is answered with.
func remoteAnswer(err error) (Exception, string) {
	var we *Error
	if errors.As(err, &we) {
		return we.Ex, err.Error()
	}
	// The op and path are the error's own: the core's (in-process or
	// through gRPC's trailer) name the call and the path it was about.
	h := hadoop.For("", "", err)
	return exception(h.Class, statusOf(h)), h.Message
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
	ex, msg := remoteAnswer(err)
	var body remoteException
	body.RemoteException.Exception = ex.Name
	body.RemoteException.JavaClassName = ex.Class
	body.RemoteException.Message = msg
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
