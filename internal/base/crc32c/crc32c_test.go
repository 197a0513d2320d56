package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func ref(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

func TestCombineSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	cases := []struct {
		name string
		n    int
	}{
		{"empty", 0}, {"one byte", 1}, {"odd", 4097}, {"64 KiB", len(data)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := data[:c.n]
			want := ref(b)
			for _, at := range []int{0, c.n / 2, c.n, r.IntN(c.n + 1)} {
				if got := Combine(ref(b[:at]), ref(b[at:]), uint64(c.n-at)); got != want {
					t.Fatalf("split at %d of %d: %08x, want %08x", at, c.n, got, want)
				}
			}
		})
	}
}

// TestCombineMany folds random pieces left to right, as a file checksum
// folds blocks.
func TestCombineMany(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		data := make([]byte, r.IntN(200000))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		var crc uint32
		for rest := data; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(40000))
			crc = Combine(crc, ref(rest[:k]), uint64(k))
			rest = rest[k:]
		}
		if want := ref(data); crc != want {
			t.Fatalf("trial %d (%d bytes): %08x, want %08x", trial, len(data), crc, want)
		}
	}
}

// TestCombineLong checks lengths too large to checksum directly (16 GiB
// of zeros after a short head) two independent ways: doubling (the CRC of
// Z‖Z from that of Z) and folding 1 MiB pieces one at a time.
func TestCombineLong(t *testing.T) {
	zero := make([]byte, 1<<20)
	cz := ref(zero)
	const pieces = 1 << 14
	c, n := cz, uint64(len(zero))
	for n < pieces*uint64(len(zero)) {
		c, n = Combine(c, c, n), 2*n
	}
	head := ref([]byte("head"))
	doubled := Combine(head, c, n)
	folded := head
	for range pieces {
		folded = Combine(folded, cz, uint64(len(zero)))
	}
	if doubled != folded {
		t.Fatalf("16 GiB: doubled %08x, folded %08x", doubled, folded)
	}
	// And against a direct checksum at a size we can afford.
	big := make([]byte, 3<<20)
	copy(big, "head")
	if got, want := Combine(ref(big[:4]), ref(big[4:]), uint64(len(big)-4)), ref(big); got != want {
		t.Fatalf("3 MiB: %08x, want %08x", got, want)
	}
}

func TestChecksumMatchesHashCRC32(t *testing.T) {
	for _, s := range []string{"", "a", "123456789"} {
		if Checksum([]byte(s)) != ref([]byte(s)) {
			t.Fatalf("%q", s)
		}
	}
	// The CRC-32C check value.
	if got := Checksum([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("check value %08x", got)
	}
}

func FuzzCombine(f *testing.F) {
	f.Add([]byte(""), 0)
	f.Add([]byte("hello, world"), 5)
	f.Add(make([]byte, 1000), 999)
	f.Fuzz(func(t *testing.T, data []byte, at int) {
		if at < 0 {
			at = -at
		}
		if at < 0 || len(data) == 0 {
			at = 0
		} else {
			at %= len(data) + 1
		}
		got := Combine(ref(data[:at]), ref(data[at:]), uint64(len(data)-at))
		if want := ref(data); got != want {
			t.Fatalf("split %d of %d: %08x, want %08x", at, len(data), got, want)
		}
	})
}

func BenchmarkCombine(b *testing.B) {
	for range b.N {
		Combine(0x12345678, 0x9abcdef0, 128<<20)
	}
}
