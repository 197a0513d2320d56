package datatransfer

import (
	"hash/crc32"
	"testing"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

func TestToCRC32C(t *testing.T) {
	data := make([]byte, 1300)
	for i := range data {
		data[i] = byte(i * 7)
	}
	ieee := func(parts ...[]byte) []uint32 {
		var out []uint32
		for _, p := range parts {
			out = append(out, crc32.ChecksumIEEE(p))
		}
		return out
	}
	cases := []struct {
		name string
		off  int64
		data []byte
		crcs []uint32
		kind errs.Kind
		want [][]byte // the chunks whose CRC32Cs come out
	}{
		{"aligned", 0, data, ieee(data[:512], data[512:1024], data[1024:]), 0, [][]byte{data[:512], data[512:1024], data[1024:]}},
		{"starts inside a chunk", 1000, data[:600], ieee(data[:24], data[24:536], data[536:600]), 0, [][]byte{data[:24], data[24:536], data[536:600]}},
		{"a bad CRC", 0, data[:512], []uint32{crc32c.Checksum(data[:512])}, errs.Corrupt, nil},
		{"too few CRCs", 0, data, ieee(data[:512]), errs.Invalid, nil},
		{"too many CRCs", 0, data[:10], ieee(data[:10], nil), errs.Invalid, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Packet{Offset: c.off, Data: c.data, CRCs: append([]uint32(nil), c.crcs...)}
			err := toCRC32C(p, 512)
			if c.kind != 0 {
				if errs.KindOf(err) != c.kind {
					t.Fatalf("got %v, want kind %v", err, c.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				if p.CRCs[i] != crc32c.Checksum(w) {
					t.Fatalf("chunk %d: CRC32C %08x, want %08x", i, p.CRCs[i], crc32c.Checksum(w))
				}
			}
		})
	}
}
