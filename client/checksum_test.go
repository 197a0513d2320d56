package client

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/base/crc32c"
)

// reply builds a whole-file GetBlockLocations reply for data cut into
// blocks of bs bytes, each with its CRC.
func reply(data []byte, bs int) *api.GetBlockLocationsResponse {
	r := &api.GetBlockLocationsResponse{FileLength: uint64(len(data))}
	for i := 0; i < len(data); i += bs {
		b := data[i:min(i+bs, len(data))]
		r.BlockIds = append(r.BlockIds, uint64(i/bs+1))
		r.GenStamps = append(r.GenStamps, 1)
		r.Lengths = append(r.Lengths, uint64(len(b)))
		r.ReplicaCounts = append(r.ReplicaCounts, 0)
		r.Crc32Cs = append(r.Crc32Cs, 1<<32|uint64(crc32c.Checksum(b)))
	}
	return r
}

func TestCompositeCRCMatchesWholeFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := crc32c.Checksum(data)
	for _, c := range []struct {
		name string
		n    int
		bs   int
	}{
		{"empty", 0, 512}, {"one partial block", 100, 512}, {"exact blocks", 4096, 512},
		{"last partial", 10000, 1024}, {"one block", 10000, 10000},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := compositeCRC("/f", reply(data[:c.n], c.bs))
			if err != nil {
				t.Fatal(err)
			}
			w := crc32c.Checksum(data[:c.n])
			if c.n == len(data) && w != want {
				t.Fatal("test data changed")
			}
			if got != w {
				t.Fatalf("%08x, want %08x", got, w)
			}
		})
	}
	// The block size does not change the file's checksum.
	a, _ := compositeCRC("/f", reply(data, 512))
	b, _ := compositeCRC("/f", reply(data, 4096))
	if a != b || a != want {
		t.Fatalf("block size changed the checksum: %08x %08x", a, b)
	}
}

func TestCompositeCRCRefusals(t *testing.T) {
	data := make([]byte, 3000)
	cases := []struct {
		name string
		edit func(r *api.GetBlockLocationsResponse)
		kind errs.Kind
		msg  string
	}{
		{"under construction", func(r *api.GetBlockLocationsResponse) { r.UnderConstruction = true }, errs.Precondition, "under construction"},
		{"a block without a crc", func(r *api.GetBlockLocationsResponse) { r.Crc32Cs[1] = 0 }, errs.Precondition, "block 1 (blk_2_1) has no recorded checksum"},
		{"no block with a crc", func(r *api.GetBlockLocationsResponse) { r.Crc32Cs = nil }, errs.Precondition, "no block of the file has a recorded checksum"},
		{"bad crc entry", func(r *api.GetBlockLocationsResponse) { r.Crc32Cs[0] = 3 << 32 }, errs.Internal, "CRC entry 0"},
		{"short arrays", func(r *api.GetBlockLocationsResponse) { r.Lengths = r.Lengths[:1] }, errs.Internal, "array lengths differ"},
		{"not from 0", func(r *api.GetBlockLocationsResponse) { r.FirstOffset = 1024 }, errs.Internal, "offset 1024"},
		{"lengths overflow", func(r *api.GetBlockLocationsResponse) { r.Lengths[1] = math.MaxUint64 }, errs.Internal, "pass 2^64"},
		{"lengths short of the file", func(r *api.GetBlockLocationsResponse) { r.FileLength++ }, errs.Internal, "cover 3000 bytes of a 3001-byte file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := reply(data, 1024)
			c.edit(r)
			_, err := compositeCRC("/dir/f", r)
			if errs.KindOf(err) != c.kind {
				t.Fatalf("got %v, want kind %v", err, c.kind)
			}
			var e *errs.Error
			if !errsAs(err, &e) || e.Path != "/dir/f" || !contains(err.Error(), c.msg) {
				t.Fatalf("error %q: want the path and %q", err, c.msg)
			}
		})
	}
}

// FuzzCompositeCRC: any reply either folds to the CRC of some bytes or is
// refused; none panics. A reply made from real bytes folds to their CRC.
func FuzzCompositeCRC(f *testing.F) {
	f.Add([]byte("hello, world"), uint16(5), uint64(0), uint64(0), false)
	f.Add([]byte{}, uint16(1), uint64(0), uint64(0), false)
	f.Add(make([]byte, 3000), uint16(1024), uint64(1), uint64(math.MaxUint64), true)
	f.Fuzz(func(t *testing.T, data []byte, bs uint16, firstOff, extraLen uint64, uc bool) {
		if bs == 0 {
			bs = 1
		}
		r := reply(data, int(bs))
		got, err := compositeCRC("/f", r)
		if err != nil || got != crc32c.Checksum(data) {
			t.Fatalf("honest reply: %08x, %v", got, err)
		}
		// Now damage it every way the fuzzer likes.
		r.FirstOffset, r.UnderConstruction = firstOff, uc
		r.FileLength += extraLen
		if len(r.Lengths) > 0 {
			r.Lengths[len(r.Lengths)-1] += extraLen
			r.Crc32Cs[0] ^= firstOff
		}
		_, _ = compositeCRC("/f", r)
	})
}

// FuzzExpandLocations: no reply makes ExpandLocations panic, and an
// accepted one gives blocks whose offsets never wrap.
func FuzzExpandLocations(f *testing.F) {
	f.Add(uint64(0), uint64(100), uint64(1<<32|7), uint32(1), uint32(0), uint8(2))
	f.Add(uint64(math.MaxUint64-50), uint64(100), uint64(0), uint32(5), uint32(9), uint8(3))
	f.Add(uint64(0), uint64(math.MaxUint64), uint64(1<<33), uint32(0), uint32(0), uint8(1))
	f.Fuzz(func(t *testing.T, first, length, crc uint64, count, index uint32, n uint8) {
		r := &api.GetBlockLocationsResponse{FirstOffset: first, Datanodes: []*api.DatanodeInfo{{Id: "a"}, {Id: "b"}}}
		for i := range int(n % 8) {
			r.BlockIds = append(r.BlockIds, uint64(i+1))
			r.GenStamps = append(r.GenStamps, 1)
			r.Lengths = append(r.Lengths, length)
			r.ReplicaCounts = append(r.ReplicaCounts, count)
			r.ReplicaIndexes = append(r.ReplicaIndexes, index)
			r.Crc32Cs = append(r.Crc32Cs, crc)
		}
		if err := ExpandLocations(r); err != nil {
			return
		}
		off := first
		for i, lb := range r.Blocks {
			if lb.Offset != off || lb.Block.Length != length {
				t.Fatalf("block %d at %d, want %d", i, lb.Offset, off)
			}
			if (crc != 0) != (lb.Block.Crc32C != nil) || (lb.Block.Crc32C != nil && *lb.Block.Crc32C != uint32(crc)) {
				t.Fatalf("block %d CRC %v from entry %#x", i, lb.Block.Crc32C, crc)
			}
			off += length
		}
	})
}

func errsAs(err error, e **errs.Error) bool { return errors.As(err, e) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
