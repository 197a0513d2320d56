package errs

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// codeOf is the one table mapping a Kind to its gRPC status code. NotLeader
// maps to Unavailable (the client retries elsewhere), with the leader hint in
// the trailer metadata key LeaderHintKey.
var codeOf = [...]codes.Code{
	Other:           codes.Unknown,
	Invalid:         codes.InvalidArgument,
	NotFound:        codes.NotFound,
	Exist:           codes.AlreadyExists,
	NotEmpty:        codes.FailedPrecondition,
	NotDir:          codes.FailedPrecondition,
	IsDir:           codes.FailedPrecondition,
	Precondition:    codes.FailedPrecondition,
	Permission:      codes.PermissionDenied,
	Unauthenticated: codes.Unauthenticated,
	Exhausted:       codes.ResourceExhausted,
	Unavailable:     codes.Unavailable,
	NotLeader:       codes.Unavailable,
	Corrupt:         codes.DataLoss,
	IO:              codes.Internal,
	Internal:        codes.Internal,
	Canceled:        codes.Canceled,
	Timeout:         codes.DeadlineExceeded,
}

// Metadata keys used to carry an Error's Kind and leader hint across gRPC.
// OpKey and PathKey carry its Op and Path (binary keys: a path is any
// UTF-8), so that the receiving side holds the same Error, fields apart,
// and a door can word a Hadoop exception from its path (errs/hadoop).
const (
	KindKey       = "blockfs-error-kind"
	LeaderHintKey = "blockfs-leader"
	OpKey         = "blockfs-error-op-bin"
	PathKey       = "blockfs-error-path-bin"
)

// Code returns the gRPC code for kind k.
func Code(k Kind) codes.Code {
	if int(k) < len(codeOf) {
		return codeOf[k]
	}
	return codes.Unknown
}

// ToStatus converts any error to a gRPC status error. A context error maps to
// Canceled/DeadlineExceeded; a *Error to its table code; anything that is
// already a status passes through; the rest is Unknown.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && KindOf(err) == Other {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	st := status.New(Code(KindOf(err)), err.Error())
	if d := RetryAfter(err); d > 0 {
		if withInfo, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)}); derr == nil {
			st = withInfo
		}
	}
	return st.Err()
}

// Trailer returns gRPC trailer metadata that lets the client rebuild the
// Kind (and leader hint) of err. Servers set it with grpc.SetTrailer.
func Trailer(err error) metadata.MD {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	md := metadata.Pairs(KindKey, e.Kind.String())
	if e.LeaderHint != "" {
		md.Append(LeaderHintKey, e.LeaderHint)
	}
	if e.Op != "" {
		md.Append(OpKey, e.Op)
	}
	if e.Path != "" {
		md.Append(PathKey, e.Path)
	}
	return md
}

// FromStatus turns a gRPC error back into a *Error. The kind comes from the
// trailer when the server sent one, else from the code.
func FromStatus(err error, trailer metadata.MD) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	k := kindFromCode(st.Code())
	if v := trailer.Get(KindKey); len(v) > 0 {
		if kk, ok := kindByName(v[0]); ok {
			k = kk
		}
	}
	e := Rebuild(k, first(trailer, OpKey), first(trailer, PathKey), st.Message())
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().IsValid() {
			e.RetryAfter = ri.GetRetryDelay().AsDuration()
		}
	}
	if v := trailer.Get(LeaderHintKey); len(v) > 0 {
		e.LeaderHint = v[0]
	}
	return e
}

// first is md's first value of key, "" if none.
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func kindByName(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), true
		}
	}
	return Other, false
}

func kindFromCode(c codes.Code) Kind {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange:
		return Invalid
	case codes.NotFound:
		return NotFound
	case codes.AlreadyExists:
		return Exist
	case codes.FailedPrecondition:
		return Precondition
	case codes.PermissionDenied:
		return Permission
	case codes.Unauthenticated:
		return Unauthenticated
	case codes.ResourceExhausted:
		return Exhausted
	case codes.Unavailable:
		return Unavailable
	case codes.DataLoss:
		return Corrupt
	case codes.Internal:
		return Internal
	case codes.Canceled:
		return Canceled
	case codes.DeadlineExceeded:
		return Timeout
	}
	return Other
}

// NotSent reports whether a gRPC call failed before it left this process:
// the connection to the peer could not be made (grpc-go's transport says
// "Error while dialing"), so the peer never saw the call.
func NotSent(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable && strings.Contains(st.Message(), "Error while dialing")
}
