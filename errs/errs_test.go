package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestKindsRoundTripGRPC: every kind maps to its code, and a status with
// the trailer comes back as the same kind (and leader hint).
func TestKindsRoundTripGRPC(t *testing.T) {
	for k := Other; k <= Timeout; k++ {
		e := &Error{Kind: k, Op: "op", Path: "/p", Msg: "boom", LeaderHint: "127.0.0.1:1"}
		st := ToStatus(e)
		if status.Code(st) != Code(k) {
			t.Errorf("%v: code %v, want %v", k, status.Code(st), Code(k))
		}
		back := FromStatus(st, Trailer(e))
		if KindOf(back) != k && k != Other {
			t.Errorf("%v came back as %v", k, KindOf(back))
		}
		if LeaderHint(back) != "127.0.0.1:1" {
			t.Errorf("%v lost its leader hint", k)
		}
	}
}

func TestTable(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		code codes.Code
	}{
		{Invalid, codes.InvalidArgument}, {NotFound, codes.NotFound}, {Exist, codes.AlreadyExists},
		{NotEmpty, codes.FailedPrecondition}, {Precondition, codes.FailedPrecondition},
		{Permission, codes.PermissionDenied}, {Unauthenticated, codes.Unauthenticated},
		{Exhausted, codes.ResourceExhausted}, {NotLeader, codes.Unavailable}, {Corrupt, codes.DataLoss},
	} {
		if Code(tc.k) != tc.code {
			t.Errorf("%v -> %v, want %v", tc.k, Code(tc.k), tc.code)
		}
	}
}

func TestIsAndWrapping(t *testing.T) {
	inner := New(NotFound, "stat", "/x", "no such file")
	wrapped := fmt.Errorf("context: %w", Wrap(Unavailable, "call", "", inner))
	if !Is(wrapped, Unavailable) || !Is(wrapped, NotFound) || Is(wrapped, Exist) {
		t.Fatal("Is does not walk the chain")
	}
	if !errors.Is(inner, E(NotFound)) || errors.Is(inner, E(Exist)) {
		t.Fatal("errors.Is with a bare kind")
	}
	if got := inner.Error(); got != "stat /x: no such file" {
		t.Fatalf("message %q", got)
	}
	if status.Code(ToStatus(context.DeadlineExceeded)) != codes.DeadlineExceeded {
		t.Fatal("context deadline is not DeadlineExceeded")
	}
	if FromStatus(status.Error(codes.NotFound, "x"), metadata.MD{}) == nil || KindOf(FromStatus(status.Error(codes.NotFound, "x"), nil)) != NotFound {
		t.Fatal("code without trailer")
	}
}

// TestRetryAfterRoundTrip: a retry hint travels as a google.rpc.RetryInfo
// detail and comes back on the client's error.
func TestRetryAfterRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
	}{
		{"none", 0},
		{"ms", 37 * time.Millisecond},
		{"seconds", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Error{Kind: Exhausted, Op: "Mkdirs", Msg: "rate limited", RetryAfter: tc.d}
			st := ToStatus(e)
			if status.Code(st) != codes.ResourceExhausted {
				t.Fatalf("code %v", status.Code(st))
			}
			back := FromStatus(st, Trailer(e))
			if got := RetryAfter(back); got != tc.d {
				t.Fatalf("retry after %v, want %v", got, tc.d)
			}
		})
	}
}

// TestOpPathRoundTrip: an error's Op and Path come back as fields from
// the trailer, and its message reads as the sender's; a status whose
// message is not the trailer's shape keeps its message whole.
func TestOpPathRoundTrip(t *testing.T) {
	for _, e := range []*Error{
		{Kind: NotFound, Op: "GetFileInfo", Path: "/a/ü b", Msg: "no such file or directory"},
		{Kind: Exist, Path: "/x", Msg: "file already exists"},
		{Kind: Precondition, Op: "Create", Msg: "held"},
		{Kind: NotEmpty, Op: "Delete", Path: "/d"},
		{Kind: IO, Op: "Create", Path: "/f", Err: errors.New("disk")},
	} {
		back := FromStatus(ToStatus(e), Trailer(e))
		var got *Error
		if !errors.As(back, &got) {
			t.Fatalf("%v: not an *Error", e)
		}
		if got.Op != e.Op || got.Path != e.Path || got.Kind != e.Kind || got.Error() != e.Error() {
			t.Errorf("sent %+v (%q), got %+v (%q)", e, e.Error(), got, got.Error())
		}
	}
	md := metadata.Pairs(KindKey, NotFound.String(), OpKey, "Other", PathKey, "/elsewhere")
	got := FromStatus(status.Error(codes.NotFound, "Stat /p: gone"), md).(*Error)
	if got.Op != "" || got.Path != "" || got.Msg != "Stat /p: gone" {
		t.Errorf("mismatched trailer: got %+v", got)
	}
}
