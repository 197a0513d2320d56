package lbm

import (
	"fmt"
	"testing"
)

// BenchmarkReadChunks reads 4 KiB at the start and at the end of a 64 MiB
// block and reports the bytes read from disk per read: a chunked block
// reads the same few chunks wherever the range is; an old-format block
// (whole-block CRC) reads all 64 MiB for any range.
func BenchmarkReadChunks(b *testing.B) {
	const size, n = 64 << 20, 4096
	data := streamData(1, size)
	for _, enc := range []bool{false, true} {
		cfg := testConfig(nil, []string{b.TempDir()}, enc)
		cfg.MaxContainerSize = 1 << 30
		s := mustOpen(b, cfg)
		streamBlock(b, s, 1, data, DefaultBytesPerChecksum, 128)
		putOldFormat(b, s, 2, data)
		for _, tc := range []struct {
			name string
			id   uint64
			off  int64
		}{
			{"start", 1, 0}, {"end", 1, size - n}, {"old-format-end", 2, size - n},
		} {
			b.Run(fmt.Sprintf("enc=%v/%s", enc, tc.name), func(b *testing.B) {
				var buf []byte
				before := s.DiskBytesRead()
				b.SetBytes(n)
				for b.Loop() {
					if tc.id == 2 {
						if _, err := s.Read(ctx, tc.id, tc.off, n); err != nil {
							b.Fatal(err)
						}
						continue
					}
					cr, err := s.ReadChunks(ctx, tc.id, tc.off, n, buf)
					if err != nil {
						b.Fatal(err)
					}
					buf = cr.Data[:cap(cr.Data)]
				}
				b.ReportMetric(float64(s.DiskBytesRead()-before)/float64(b.N), "disk-B/op")
			})
		}
		s.Close()
	}
}

// BenchmarkStreamedWrite streams 16 MiB blocks in 64 KiB writes (chunk
// CRCs verified, then encrypted or not, then written), with Commit's
// fsyncs, plain vs encrypted at rest.
func BenchmarkStreamedWrite(b *testing.B) {
	const size, piece, bpc = 16 << 20, 64 << 10, DefaultBytesPerChecksum
	data := streamData(2, size)
	crcs := chunkCRCs(data, bpc)
	for _, enc := range []bool{false, true} {
		b.Run(fmt.Sprintf("enc=%v", enc), func(b *testing.B) {
			cfg := testConfig(nil, []string{b.TempDir()}, enc)
			cfg.MaxContainerSize = 1 << 30
			s := mustOpen(b, cfg)
			defer s.Close()
			b.SetBytes(size)
			id := uint64(0)
			for b.Loop() {
				id++
				w, err := s.Create(ctx, BlockMeta{ID: id, Length: size}, bpc)
				if err != nil {
					b.Fatal(err)
				}
				for p := 0; p < size; p += piece {
					if err := w.Write(data[p:p+piece], crcs[p/bpc:(p+piece)/bpc]); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := w.Commit(ctx); err != nil {
					b.Fatal(err)
				}
				// Keep the disk footprint bounded.
				if err := s.Delete(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
