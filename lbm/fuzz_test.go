package lbm

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzReadRecords feeds arbitrary metadata payloads to both replay readers
// (plain files): neither may panic and both must agree on the outcome.
func FuzzReadRecords(f *testing.F) {
	var seed []byte
	seed = appendCreate(seed, &createRec{ID: 1, Offset: 4096, Length: 10})
	seed = appendCreate(seed, &createRec{ID: 2, Offset: 8192, Length: 1})
	seed = appendDelete(seed, 1)
	f.Add(seed)
	f.Add(append(append([]byte(nil), seed...), make([]byte, 13)...))
	f.Add(seed[:len(seed)-3])
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, payload []byte) {
		var results []string
		for _, mode := range replayModes {
			m := NewMemFS()
			m.MkdirAll("/d", 0o755)
			hdr := make([]byte, fileHeaderLen)
			encodeFileHeader(hdr, metaMagic, 0)
			mf, _ := m.Create("/d/c.metadata")
			mf.WriteAt(append(hdr, payload...), 0)
			df, _ := m.Create("/d/c.data")
			df.Truncate(1 << 20)
			cfg := testConfig(m, []string{"/d"}, false)
			mode.apply(&cfg)
			s, err := Open(ctx, cfg)
			var res string
			if err != nil {
				res = "err"
			} else {
				var b bytes.Buffer
				for _, bi := range s.Blocks() {
					fmt.Fprintf(&b, "%d/%d/%d;", bi.ID, bi.Length, bi.CRC)
				}
				fi, _ := m.Stat("/d/c.metadata")
				if fi != nil {
					fmt.Fprintf(&b, "size=%d", fi.Size())
				}
				res = b.String()
				s.Close()
			}
			results = append(results, res)
		}
		for i, r := range results[1:] {
			if r != results[0] {
				t.Fatalf("%s %q vs %s %q", replayModes[0].name, results[0], replayModes[i+1].name, r)
			}
		}
	})
}
