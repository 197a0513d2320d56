package errs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies an error. Its values are stable: they are carried across
// the wire (as gRPC codes plus a detail string) and must never be renumbered.
type Kind uint8

// The kinds of error. Keep kindNames and the gRPC table in step with these.
const (
	Other           Kind = iota // unclassified; maps to Unknown
	Invalid                     // malformed request or argument
	NotFound                    // path, inode, block or node does not exist
	Exist                       // the thing to create already exists
	NotEmpty                    // directory not empty and recursive not set
	NotDir                      // a path component or target is not a directory
	IsDir                       // a file operation was aimed at a directory
	Precondition                // state does not allow the operation (e.g. wrong blocks on complete)
	Permission                  // caller is known but not allowed
	Unauthenticated             // caller could not be identified, or token invalid
	Exhausted                   // request or resource too large
	Unavailable                 // no leader, node stopping, transient
	NotLeader                   // this node is not the leader; see LeaderHint
	Corrupt                     // data failed a checksum
	IO                          // an I/O error from the disk
	Internal                    // a bug or invariant violation
	Canceled                    // the caller's context ended
	Timeout                     // a deadline passed
)

var kindNames = [...]string{
	Other:           "other",
	Invalid:         "invalid argument",
	NotFound:        "not found",
	Exist:           "already exists",
	NotEmpty:        "directory not empty",
	NotDir:          "not a directory",
	IsDir:           "is a directory",
	Precondition:    "failed precondition",
	Permission:      "permission denied",
	Unauthenticated: "unauthenticated",
	Exhausted:       "resource exhausted",
	Unavailable:     "unavailable",
	NotLeader:       "not leader",
	Corrupt:         "corrupt",
	IO:              "I/O error",
	Internal:        "internal error",
	Canceled:        "canceled",
	Timeout:         "deadline exceeded",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is the blockfs error. Op names the operation ("Mkdirs", "lbm.Store.Read"; see the package doc),
// Path the object it touched (a file path, block id or file name), Msg the
// specific problem. Err, if set, is the underlying cause.
type Error struct {
	Kind Kind
	Op   string
	Path string
	Msg  string
	// LeaderHint is the gRPC address of the leader, for NotLeader and
	// Unavailable errors raised by a follower.
	LeaderHint string
	// RetryAfter, on an Exhausted error, is how long the server asks the
	// caller to wait before it tries again (a rate limit's refill time);
	// it travels as a google.rpc.RetryInfo status detail.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
	}
	if e.Path != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(e.Path)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Msg != "" {
		b.WriteString(e.Msg)
	} else {
		b.WriteString(e.Kind.String())
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same Kind with no other
// fields set, so errors.Is(err, errs.E(errs.NotFound)) works as a kind test.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Kind == e.Kind && t.Op == "" && t.Path == "" && t.Msg == "" && t.Err == nil
}

// E builds an error of kind k. Op, path and message are set with the helpers
// below so call sites read as one line: errs.E(errs.NotFound).Withf(...).
func E(k Kind) *Error { return &Error{Kind: k} }

// New returns an error of kind k for operation op on path with message msg.
func New(k Kind, op, path, msg string) *Error {
	return &Error{Kind: k, Op: op, Path: path, Msg: msg}
}

// Newf is New with a formatted message.
func Newf(k Kind, op, path, format string, args ...any) *Error {
	return &Error{Kind: k, Op: op, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k that wraps cause.
func Wrap(k Kind, op, path string, cause error) *Error {
	return &Error{Kind: k, Op: op, Path: path, Err: cause}
}

// WithOp returns err with its Op set to op: a copy when err is an
// *Error (err itself is unchanged), err as it is otherwise (nil included).
// A server uses it to name its operation on an error from a call that
// could not know it, such as namespace.ParsePath at the edge.
func WithOp(err error, op string) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	c := *e
	c.Op = op
	return &c
}

// Rebuild is the Error of kind k that another process (or the log) sent
// as its op, its path and its whole message, Error()'s "op path: msg":
// the fields come apart again, so that its Error() says the same. A
// message not of that shape is kept whole, without op or path.
func Rebuild(k Kind, op, path, message string) *Error {
	e := &Error{Kind: k, Msg: message}
	if op == "" && path == "" {
		return e
	}
	head := strings.TrimSpace(op + " " + path)
	if rest, ok := strings.CutPrefix(message, head+": "); ok {
		e.Op, e.Path, e.Msg = op, path, rest
	}
	return e
}

// KindOf returns the Kind of the first *Error in err's chain, Other if there
// is none, and Other for nil.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Other
}

// Is reports whether err has kind k anywhere in its chain.
func Is(err error, k Kind) bool {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return false
		}
		if e.Kind == k {
			return true
		}
		err = e.Err
	}
	return false
}

// RetryAfter returns the retry delay carried by err, or 0.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// LeaderHint returns the leader address carried by err, or "".
func LeaderHint(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.LeaderHint
	}
	return ""
}

// SafeModeException names a write refused by a namenode in safe mode, in
// the refusal's message (an errs.Precondition), as HDFS names the
// exception; it survives a trip through gRPC with the message.
const SafeModeException = "SafeModeException"

// IsSafeMode reports whether err is a safe-mode refusal: clients retry
// it, and WebHDFS answers it as HDFS does.
func IsSafeMode(err error) bool {
	return KindOf(err) == Precondition && strings.Contains(err.Error(), SafeModeException)
}
