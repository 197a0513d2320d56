package hdfsrpc

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/errs/hadoop"
)

// TestBackoffWaitedOut: a call the namenode backs off with a retry hint
// is held by the door and asked again, as HDFS's clients read no hint;
// one still backed off past BackoffWait is answered RetriableException,
// and a refusal without a hint is answered at once.
func TestBackoffWaitedOut(t *testing.T) {
	backedOff := &errs.Error{Kind: errs.Exhausted, Op: "Mkdirs", Msg: "alice is backed off", RetryAfter: 20 * time.Millisecond}
	mkdirs := &hdfs.MkdirsRequestProto{Src: proto.String("/d"), Masked: &hdfs.FsPermissionProto{Perm: proto.Uint32(0o755)}, CreateParent: proto.Bool(true)}
	for _, tc := range []struct {
		name     string
		refusals int // backed-off answers before the admission
		refusal  error
		wantErr  string // Hadoop class; "" for success
		wantAsks int
	}{
		{"admitted after two backoffs", 2, backedOff, "", 3},
		{"backed off past the wait", 1000, backedOff, hadoop.Retriable, 0},
		{"refused without a hint", 1000, errs.New(errs.Permission, "Mkdirs", "/d", "no"), hadoop.AccessControl, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &fakeService{}
			d := newDoor(t, svc, true)
			d.cfg.BackoffWait = 200 * time.Millisecond
			asks := 0
			d.cfg.Authorize = func(ctx context.Context, _, _ string, _ any) (context.Context, error) {
				asks++
				if asks <= tc.refusals {
					return ctx, tc.refusal
				}
				return ctx, nil
			}
			_, err := call(t, d, "mkdirs", mkdirs)
			if tc.wantErr == "" {
				if err != nil || len(svc.paths) != 1 || asks != tc.wantAsks {
					t.Fatalf("%v, %d calls made, %d asks; want success after %d asks", err, len(svc.paths), asks, tc.wantAsks)
				}
				return
			}
			if class, _ := Exception(err); class != tc.wantErr || len(svc.paths) != 0 {
				t.Fatalf("%v (class %s), %d calls made; want %s and none", err, class, len(svc.paths), tc.wantErr)
			}
			if tc.wantAsks > 0 && asks != tc.wantAsks {
				t.Fatalf("%d asks, want %d", asks, tc.wantAsks)
			}
		})
	}
}
