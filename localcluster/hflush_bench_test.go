package localcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/localcluster"
)

// BenchmarkHflush: the latency of a 1 KiB write followed by Hflush (the
// pipeline's acks, then the length recorded with the namenode through
// Raft) on a 3-namenode, 3-datanode cluster under mTLS, beside the same
// write followed by nothing (b.N writes then one Close).
func BenchmarkHflush(b *testing.B) {
	for _, flush := range []bool{true, false} {
		name := "write+hflush"
		if !flush {
			name = "write"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			c, err := localcluster.Start(ctx, localcluster.Config{Namenodes: 3, Datanodes: 3, Dir: b.TempDir(), MTLS: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cl, err := c.Client()
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			w, err := cl.Create(ctx, "/bench", client.CreateOptions{Replication: 3})
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 1024)
			b.SetBytes(int64(len(buf)))
			b.ResetTimer()
			for range b.N {
				if _, err := w.Write(buf); err != nil {
					b.Fatal(err)
				}
				if flush {
					if err := w.Hflush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
