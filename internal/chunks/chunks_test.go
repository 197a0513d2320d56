package chunks

import "testing"

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
