package chunks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

func TestSumsAndVerify(t *testing.T) {
	data := make([]byte, 1300)
	for i := range data {
		data[i] = byte(i * 7)
	}
	crcs := Sums(nil, data, 512)
	if len(crcs) != 3 || Count(len(data), 512) != 3 {
		t.Fatalf("got %d crcs", len(crcs))
	}
	if i := Verify(data, crcs, 512); i != -1 {
		t.Fatalf("intact data: bad chunk %d", i)
	}
	tests := []struct {
		name string
		mod  func(d []byte, c []uint32) ([]byte, []uint32)
		want int
	}{
		{"flip in chunk 1", func(d []byte, c []uint32) ([]byte, []uint32) { d[600] ^= 1; return d, c }, 1},
		{"flip in short tail", func(d []byte, c []uint32) ([]byte, []uint32) { d[1299] ^= 0x80; return d, c }, 2},
		{"missing crc", func(d []byte, c []uint32) ([]byte, []uint32) { return d, c[:2] }, 2},
		{"extra crc", func(d []byte, c []uint32) ([]byte, []uint32) { return d, append(c, 0) }, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, c := tc.mod(append([]byte(nil), data...), append([]uint32(nil), crcs...))
			if got := Verify(d, c, 512); got != tc.want {
				t.Fatalf("Verify = %d, want %d", got, tc.want)
			}
		})
	}
	if Update(Update(0, data[:100]), data[100:]) != CRC(data) {
		t.Fatal("Update does not chain")
	}
	for _, bpc := range []int{0, 63, 100, 2 << 20} {
		if Valid(bpc) {
			t.Fatalf("Valid(%d)", bpc)
		}
	}
}

func TestCheckSize(t *testing.T) {
	for _, bpc := range []int{64, 512, 4096, 1 << 20} {
		if err := CheckSize("op", bpc); err != nil {
			t.Fatalf("CheckSize(%d) = %v", bpc, err)
		}
	}
	for _, bpc := range []int64{-512, 0, 32, 63, 100, 500, 2 << 20} {
		err := CheckSize("op", bpc)
		if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), fmt.Sprintf("op: bytes per checksum %d: want a power of two in [64, 1048576]", bpc)) {
			t.Fatalf("CheckSize(%d) = %v", bpc, err)
		}
	}
	if err := CheckSize("op", uint64(1)<<63); err == nil {
		t.Fatal("CheckSize(2^63) = nil")
	}
}

func TestBlockSizeProblem(t *testing.T) {
	cases := []struct {
		bs   uint64
		want string
	}{
		{1024, ""},
		{1 << 20, ""},
		{512, "below the minimum 1024 (--min-block-size)"},
		{2 << 20, "above the maximum 1048576 (--max-block-size)"},
		{1500, ""}, // not a multiple of the chunk: allowed, as HDFS allows it
	}
	for _, c := range cases {
		if got := BlockSizeProblem(c.bs, 1024, 1<<20, 512); got != c.want {
			t.Errorf("BlockSizeProblem(%d) = %q, want %q", c.bs, got, c.want)
		}
	}
	if got := BlockSizeProblem(1024, 1024, 1<<20, 0); !strings.Contains(got, "bytes per checksum 0") {
		t.Errorf("BlockSizeProblem with bpc 0 = %q", got)
	}
}
