package lbm

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/blockfs/blockfs/errs"
)

// replayFuzzKey is the server key of FuzzReplayPlainEncrypted, and
// replayFuzzHdr a fixed encryption header wrapped by it (made once per
// process, so a fuzz run is deterministic).
var (
	replayFuzzOnce sync.Once
	replayFuzzFC   *fileCipher
	replayFuzzHdr  []byte
	replayFuzzKey  []byte
)

func replayFuzzSetup(t testing.TB) {
	replayFuzzOnce.Do(func() {
		m := NewMemFS()
		m.MkdirAll("/", 0o755)
		key, err := loadOrCreateServerKey(m, "/key")
		if err != nil {
			panic(err)
		}
		k, err := newKeyring(key)
		if err != nil {
			panic(err)
		}
		fc, eh, err := k.newFileCipher()
		if err != nil {
			panic(err)
		}
		replayFuzzKey, replayFuzzFC, replayFuzzHdr = readAll(t.(*testing.T), m, "/key"), fc, eh
	})
}

// FuzzReplayPlainEncrypted replays one container from arbitrary metadata
// bytes (records region plaintext) four ways: plain or encrypted at rest,
// streaming or in-memory. The encrypted image is what a writer and a crash
// would leave: the payload is encrypted at its offsets, except its trailing
// all-zero run, which stays zero on disk (a crash-zeroed tail). All four
// must agree: same error or not, same blocks, same truncated length.
func FuzzReplayPlainEncrypted(f *testing.F) {
	var seed []byte
	seed = appendCreate(seed, &createRec{ID: 1, Inode: 3, GenStamp: 4, Offset: 4096, Length: 10, CRC: 7})
	seed = appendCreate(seed, &createRec{ID: 2, Offset: 8192, Length: 1})
	seed = appendDelete(seed, 1)
	f.Add(seed, uint8(0))
	f.Add(seed, uint8(13))                                                 // zero tail
	f.Add(seed[:len(seed)-3], uint8(0))                                    // cut record
	f.Add(append(bytes.Clone(seed[:68+8]), make([]byte, 20)...), uint8(0)) // header, zero body
	f.Add([]byte{}, uint8(200))
	f.Add(appendDelete(nil, 9), uint8(0)) // DELETE of an unknown block: corrupt
	chunked := appendCreate(nil, &createRec{ID: 5, Offset: 4096, Length: 1000, CRC: 9, BPC: 512})
	f.Add(chunked, uint8(0))                                                                           // CREATE2
	f.Add(appendCreate(nil, &createRec{ID: 5, Offset: 4096, Length: 10, BPC: 500}), uint8(0))          // bad bpc
	f.Add(appendCreate(nil, &createRec{ID: 5, Offset: 1<<20 - 4096, Length: 4090, BPC: 64}), uint8(0)) // table past EOF
	bad := bytes.Clone(seed)
	bad[70] ^= 1
	f.Add(bad, uint8(5)) // flipped bit in the middle
	f.Fuzz(func(t *testing.T, payload []byte, zeros uint8) {
		replayFuzzSetup(t)
		payload = append(bytes.Clone(payload), make([]byte, zeros)...)
		z := zeroFrom(payload)
		var results, labels, errText []string
		for _, enc := range []bool{false, true} {
			hdr := make([]byte, fileHeaderLen)
			encodeFileHeader(hdr, metaMagic, 0)
			img := bytes.Clone(payload)
			hl := int64(fileHeaderLen)
			if enc {
				replayFuzzFC.xorAt(hdr, hdr, encHeaderLen)
				hdr = append(bytes.Clone(replayFuzzHdr), hdr...)
				hl += encHeaderLen
				replayFuzzFC.xorAt(img[:z], img[:z], hl)
				if z > 0 && img[z-1] == 0 {
					t.Skip("ciphertext ends in a zero byte: the on-disk zero tail starts earlier than the plaintext's")
				}
			}
			for _, mode := range replayModes {
				m := NewMemFS()
				m.MkdirAll("/d", 0o755)
				writeAll(t, m, "/key", replayFuzzKey)
				writeAll(t, m, "/d/c.metadata", append(hdr, img...))
				df, _ := m.Create("/d/c.data")
				df.Truncate(1 << 20)
				cfg := testConfig(m, []string{"/d"}, false)
				cfg.KeyFile = "/key"
				mode.apply(&cfg)
				s, err := Open(ctx, cfg)
				var res string
				if err != nil {
					res = "err:" + errs.KindOf(err).String()
					errText = append(errText, err.Error())
				} else {
					var b bytes.Buffer
					for _, bi := range s.Blocks() {
						fmt.Fprintf(&b, "%d/%d/%d/%d/%d;", bi.ID, bi.Length, bi.CRC, bi.Inode, bi.GenStamp)
					}
					fi, _ := m.Stat("/d/c.metadata")
					if fi != nil {
						fmt.Fprintf(&b, "payload=%d", fi.Size()-hl)
					}
					res = b.String()
					s.Close()
				}
				labels = append(labels, fmt.Sprintf("enc=%v/%s", enc, mode.name))
				results = append(results, res)
			}
		}
		for _, r := range results[1:] {
			if r != results[0] {
				var b bytes.Buffer
				for i := range results {
					fmt.Fprintf(&b, "%s: %s\n", labels[i], results[i])
				}
				t.Fatalf("replays disagree:\n%s(errors: %q)", b.String(), errText)
			}
		}
	})
}
