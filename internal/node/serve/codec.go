package serve

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// pooledMin is the smallest buffer the codec asks gRPC's pool for: gRPC
// wraps a buffer below its pooling threshold (1 KiB) as a plain slice that
// is never returned, so a smaller request would be an allocation per reply.
const pooledMin = 1<<10 + 1

// Codec returns the protobuf codec a blockfs server marshals with (install
// it with grpc.ForceServerCodecV2). It differs from gRPC's own in two ways:
//
//   - Every reply is marshaled into a buffer from gRPC's buffer pool, which
//     gRPC frees once the bytes are written; gRPC's codec allocates a new
//     slice for each message of up to 1 KiB, which is most replies.
//   - After a reply is marshaled, release (if not nil) is called with it.
//     The server's handlers may then recycle it: gRPC reads a sent message
//     after marshaling only for stats handlers, which blockfs servers do not
//     install, and for request tracing (grpc.EnableTracing), under which
//     release is not called. A server given a stats handler (grpc.StatsHandler,
//     otelgrpc) must take a codec without release, or the handler reads
//     recycled replies.
//
// Requests are unmarshaled by gRPC's codec.
func Codec(release func(any)) encoding.CodecV2 {
	return codec{release: release, base: encoding.GetCodecV2(protoenc.Name)}
}

type codec struct {
	release func(any)
	base    encoding.CodecV2
}

func (c codec) Name() string { return protoenc.Name }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	var m proto.Message
	switch v := v.(type) {
	case protoadapt.MessageV1: // generated messages of either API
		m = protoadapt.MessageV2Of(v)
	case proto.Message:
		m = v
	default:
		return nil, fmt.Errorf("serve: cannot marshal %T: not a protobuf message", v)
	}
	// Size fills the size caches MarshalAppend then reads (UseCachedSize).
	size := proto.Size(m)
	pool := mem.DefaultBufferPool()
	buf := pool.Get(max(size, pooledMin))
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend((*buf)[:0], m)
	if err != nil {
		pool.Put(buf)
		return nil, err
	}
	*buf = out // the same array: its capacity held size bytes
	if c.release != nil && !grpc.EnableTracing {
		c.release(v)
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.base.Unmarshal(data, v) }
