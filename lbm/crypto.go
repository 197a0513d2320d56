package lbm

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/blockfs/blockfs/errs"
)

// Encryption at rest. Every encrypted file starts with a 128-byte cleartext
// encryption header holding a random per-file AES-256 key and CTR base IV,
// wrapped (AES-256-GCM) by the server key. Every byte at file offset
// off >= 128 is XORed with keystream byte off of AES-CTR(fileKey, baseIV):
// the counter block for offset off is baseIV + off/16 (128-bit big-endian
// addition) and the first off%16 bytes of that block's keystream are
// skipped, so any slice [off, off+n) is en/decrypted on its own.

const (
	encMagic     = "BFSENC01"
	encHeaderLen = 128
	encAlgAES256 = 1
	serverKeyLen = 32
	keyFileLen   = 48
	keyFileMagic = "BFSKEY01"
)

// fileCipher is immutable after creation but for its scratch pool, and
// safe for concurrent use: cipher.Block from crypto/aes is stateless; a
// long slice makes its own CTR stream, a short one borrows scratch.
type fileCipher struct {
	block   cipher.Block
	iv      [16]byte
	scratch sync.Pool // of *scratch, for xorSmall
}

// xorAt XORs src into dst with the keystream at absolute file offset off.
func (fc *fileCipher) xorAt(dst, src []byte, off int64) {
	if len(src) == 0 {
		return
	}
	var iv [16]byte
	hi := binary.BigEndian.Uint64(fc.iv[0:8])
	lo := binary.BigEndian.Uint64(fc.iv[8:16])
	add := uint64(off) / 16
	nlo := lo + add
	if nlo < lo {
		hi++
	}
	binary.BigEndian.PutUint64(iv[0:8], hi)
	binary.BigEndian.PutUint64(iv[8:16], nlo)
	if len(src) <= smallXOR {
		fc.xorSmall(dst, src, iv, int(off%16))
		return
	}
	fc.xorStream(dst, src, iv, int(off%16))
}

// xorStream is xorAt for a long src, through crypto/cipher's CTR stream
// (its multi-block assembly path); iv is the counter block at the offset's
// 16-byte block, skip bytes into it.
func (fc *fileCipher) xorStream(dst, src []byte, iv [16]byte, skip int) {
	s := cipher.NewCTR(fc.block, iv[:])
	if skip != 0 {
		var discard [16]byte
		s.XORKeyStream(discard[:skip], discard[:skip])
	}
	s.XORKeyStream(dst, src)
}

// smallXOR is the slice size up to which xorAt encrypts the counter
// blocks itself: a metadata record's header or body (replay does two per
// record) then costs a few block encryptions and no allocation, where a
// CTR stream allocates and takes longer to set up than such a slice takes
// to encrypt (figures: docs/OPERATIONS.md, "Measured figures behind design
// choices").
const smallXOR = 512

// scratch is xorSmall's counter and keystream buffers, pooled per file
// cipher because a slice handed to cipher.Block.Encrypt escapes to the
// heap.
type scratch struct{ ctr, ks [16]byte }

// xorSmall is xorAt for a short src: the counter block for the offset's
// 16-byte block is ctr (already advanced to it), skip bytes into it.
func (fc *fileCipher) xorSmall(dst, src []byte, ctr [16]byte, skip int) {
	sc, _ := fc.scratch.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	sc.ctr = ctr
	for i := 0; i < len(src); {
		fc.block.Encrypt(sc.ks[:], sc.ctr[:])
		n := min(16-skip, len(src)-i)
		for j := range n {
			dst[i+j] = src[i+j] ^ sc.ks[skip+j]
		}
		i += n
		skip = 0
		// The next counter: big-endian increment of all 128 bits, as
		// crypto/cipher's CTR does.
		for k := 15; k >= 0; k-- {
			sc.ctr[k]++
			if sc.ctr[k] != 0 {
				break
			}
		}
	}
	fc.scratch.Put(sc)
}

// keyring holds the server key's AEAD used to wrap file keys.
type keyring struct{ aead cipher.AEAD }

func newKeyring(serverKey []byte) (*keyring, error) {
	b, err := aes.NewCipher(serverKey)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, "lbm.Open", "", err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "lbm.Open", "", err)
	}
	return &keyring{aead: g}, nil
}

// newFileCipher makes a random file key and IV and its 128-byte header:
//
//	0 magic "BFSENC01" | 8 version u8 (1) | 9 alg u8 (1 = AES-256-CTR) |
//	10..12 zero | 12 GCM nonce [12] | 24 GCM(serverKey, nonce,
//	aad=bytes 0..12, fileKey[32] ‖ baseIV[16]) [48+16 tag] | 88..128 zero
func (k *keyring) newFileCipher() (*fileCipher, []byte, error) {
	hdr := make([]byte, encHeaderLen)
	var secret [48]byte
	if _, err := io.ReadFull(rand.Reader, secret[:]); err != nil {
		return nil, nil, errs.Wrap(errs.Internal, "lbm.Open", "", err)
	}
	copy(hdr[0:8], encMagic)
	hdr[8] = 1
	hdr[9] = encAlgAES256
	if _, err := io.ReadFull(rand.Reader, hdr[12:24]); err != nil {
		return nil, nil, errs.Wrap(errs.Internal, "lbm.Open", "", err)
	}
	k.aead.Seal(hdr[24:24], hdr[12:24], secret[:], hdr[0:12])
	fc, err := cipherFromSecret(secret[:])
	return fc, hdr, err
}

func cipherFromSecret(secret []byte) (*fileCipher, error) {
	b, err := aes.NewCipher(secret[:32])
	if err != nil {
		return nil, errs.Wrap(errs.Internal, "lbm.Open", "", err)
	}
	fc := &fileCipher{block: b}
	copy(fc.iv[:], secret[32:48])
	return fc, nil
}

// isEncHeader reports whether b starts with the encryption magic.
func isEncHeader(b []byte) bool { return len(b) >= 8 && string(b[:8]) == encMagic }

// openHeader unwraps a file's encryption header.
func (k *keyring) openHeader(path string, hdr []byte) (*fileCipher, error) {
	if len(hdr) < encHeaderLen || !isEncHeader(hdr) || hdr[8] != 1 || hdr[9] != encAlgAES256 {
		return nil, errs.Newf(errs.Corrupt, "lbm.Open", path, "bad encryption header at offset 0")
	}
	if k == nil {
		return nil, errs.Newf(errs.Invalid, "lbm.Open", path, "file is encrypted but no server key is configured")
	}
	var secret [48]byte
	if _, err := k.aead.Open(secret[:0], hdr[12:24], hdr[24:88], hdr[0:12]); err != nil {
		return nil, errs.Newf(errs.Corrupt, "lbm.Open", path, "encryption header at offset 0 does not open with the server key")
	}
	return cipherFromSecret(secret[:])
}

// loadOrCreateServerKey reads the key file at path, creating it (0600,
// 32 random bytes) if it does not exist. Layout (48 bytes):
//
//	0 magic "BFSKEY01" | 8 alg u8 (1) | 9..12 zero | 12 crc32c(key) u32 | 16 key [32]
func loadOrCreateServerKey(fs FS, path string) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err == nil {
		defer f.Close()
		var b [keyFileLen]byte
		if n, err := f.ReadAt(b[:], 0); n != keyFileLen {
			return nil, errs.Wrap(errs.Corrupt, "lbm.Open", path, errors.Join(errors.New("short key file"), err))
		}
		if string(b[0:8]) != keyFileMagic || b[8] != encAlgAES256 ||
			binary.LittleEndian.Uint32(b[12:16]) != crc32c(b[16:48]) {
			return nil, errs.New(errs.Corrupt, "lbm.Open", path, "bad server key file")
		}
		return append([]byte(nil), b[16:48]...), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, errs.Wrap(errs.IO, "lbm.Open", path, err)
	}
	var b [keyFileLen]byte
	copy(b[0:8], keyFileMagic)
	b[8] = encAlgAES256
	if _, err := io.ReadFull(rand.Reader, b[16:48]); err != nil {
		return nil, errs.Wrap(errs.Internal, "lbm.Open", path, err)
	}
	binary.LittleEndian.PutUint32(b[12:16], crc32c(b[16:48]))
	err = WriteFileAtomic(fs, path, b[:], 0o600)
	if err != nil {
		return nil, errs.Wrap(errs.IO, "lbm.Open", path, err)
	}
	return append([]byte(nil), b[16:48]...), nil
}
