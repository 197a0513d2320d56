package errs

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestNotSent(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.1:9100: connect: connection refused"`), true},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), false}, // sent, then the stream broke
		{status.Error(codes.DeadlineExceeded, "Error while dialing"), false},
		{errors.New("Error while dialing"), false}, // not a gRPC status
		{nil, false},
	} {
		if got := NotSent(c.err); got != c.want {
			t.Errorf("NotSent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
