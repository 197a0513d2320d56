package serve

import (
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestCodec: messages of every size round-trip, each marshaled into a
// pooled buffer (never the plain slice gRPC's codec makes below 1 KiB),
// release sees each message once and only after it is marshaled (it wipes
// the message, as a recycler may), and what is not a protobuf message is
// refused without a release.
func TestCodec(t *testing.T) {
	var released []any
	var marshaling bool
	c := Codec(func(v any) {
		if marshaling {
			released = append(released, v)
		}
		if b, ok := v.(*wrapperspb.BytesValue); ok {
			b.Value = nil
		}
	})
	for _, n := range []int{0, 10, 1000, 1 << 10, 5000, 1 << 20} {
		in := wrapperspb.Bytes(make([]byte, n))
		for i := range in.Value {
			in.Value[i] = byte(i)
		}
		orig := proto.Clone(in)
		released = nil
		marshaling = true
		data, err := c.Marshal(in)
		marshaling = false
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if len(released) != 1 || released[0] != in {
			t.Fatalf("%d bytes: released %v, want the message once", n, released)
		}
		if len(data) != 1 {
			t.Fatalf("%d bytes: %d buffers", n, len(data))
		}
		if _, plain := data[0].(mem.SliceBuffer); plain {
			t.Fatalf("%d bytes: an unpooled buffer", n)
		}
		out := new(wrapperspb.BytesValue)
		if err := c.Unmarshal(data, out); err != nil {
			t.Fatalf("%d bytes: unmarshal: %v", n, err)
		}
		if !proto.Equal(orig, out) {
			t.Fatalf("%d bytes: round trip changed the message", n)
		}
		data.Free()
	}
	released = nil
	if _, err := c.Marshal(struct{}{}); err == nil || len(released) != 0 {
		t.Fatalf("a non-message: err %v, released %v", err, released)
	}
	if _, err := Codec(nil).Marshal(wrapperspb.String("x")); err != nil {
		t.Fatalf("no release: %v", err)
	}
}
