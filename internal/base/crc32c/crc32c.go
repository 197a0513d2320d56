// Package crc32c combines CRC-32C (Castagnoli) checksums: given the CRC of
// A and the CRC and length of B, Combine gives the CRC of A followed by B
// without reading either. blockfs uses it for file checksums (the CRC of a
// whole file from the CRCs and lengths of its blocks, as HDFS's
// COMPOSITE_CRC mode does).
//
// The math: hash/crc32's CRC-32C is the reflected CRC with polynomial
// 0x82F63B78, initial value and final xor 0xFFFFFFFF. For such a CRC,
//
//	crc(A‖B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B)
//
// (the pre- and post-conditioning cancel out between the two terms).
// Multiplying by x^(8n) mod P is done by square-and-multiply over a table
// of x^(2^k) mod P, so Combine costs O(log n) polynomial multiplications,
// each 32 shift-and-xor steps.
package crc32c

import "hash/crc32"

// poly is the reflected Castagnoli polynomial: bit 31-i holds the
// coefficient of x^i (the top x^32 term is implicit).
const poly = 0x82F63B78

// one is the polynomial 1 (x^0) in the reflected representation.
const one = 1 << 31

// table is the CRC-32C lookup table of hash/crc32, for Checksum.
var table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of b (hash/crc32 with the Castagnoli
// table).
func Checksum(b []byte) uint32 { return crc32.Checksum(b, table) }

// Update extends crc, the CRC32C of some bytes, with b.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, table, b) }

// mulMod returns a·b mod P, both reflected polynomials of degree < 32.
// It walks a from x^0 upwards (its top bit down), adding the matching
// multiple of b, and multiplies b by x (mod P) at each step.
func mulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(one); m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a &^= m
		}
		// b = b·x mod P: in the reflected form, x shifts right and the
		// coefficient falling off the end (x^32) folds back as P.
		if b&1 != 0 {
			b = b>>1 ^ poly
		} else {
			b >>= 1
		}
	}
	return p
}

// pow2 holds x^(2^k) mod P for k = 0..63.
var pow2 = func() (t [64]uint32) {
	p := uint32(one >> 1) // x^1
	for k := range t {
		t[k] = p
		p = mulMod(p, p)
	}
	return t
}()

// xPow8n returns x^(8n) mod P.
func xPow8n(n uint64) uint32 {
	p := uint32(one)
	// 8n = n << 3: bit j of n is bit j+3 of the exponent. For n at or
	// above 2^61 the exponent overflows 64 bits; x^(2^k) mod P is periodic
	// in k for k >= 1, but no byte count that large exists, so the table
	// simply stops at k = 63 (n's top three bits are ignored).
	for k := 3; n != 0 && k < len(pow2); k++ {
		if n&1 != 0 {
			p = mulMod(pow2[k], p)
		}
		n >>= 1
	}
	return p
}

// Combine returns the CRC-32C of the concatenation A‖B given crcA =
// CRC-32C(A), crcB = CRC-32C(B) and lenB = len(B) in bytes. lenB = 0 means
// B is empty (then crcB is 0 and the result is crcA).
func Combine(crcA, crcB uint32, lenB uint64) uint32 {
	if lenB == 0 {
		return crcA ^ crcB
	}
	return mulMod(xPow8n(lenB), crcA) ^ crcB
}
