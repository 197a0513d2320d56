// Package security implements blockfs block access tokens and the identity
// helpers around them. It is a pure library: the namenode and the datanode
// wire it in; nothing here starts a server or talks to Raft.
//
// # Keys
//
// Each namenode signs with its own Ed25519 key ([KeyPair]), held by a
// [KeyManager] that rotates it on a schedule (Config.KeyRotation). The public
// half ([PublicKey]: kid, key, validity window) has a stable binary encoding
// ([PublicKey.MarshalBinary], docs/FORMATS.md "Block tokens and keys") so the
// namenode can register it through Raft and ship it to datanodes in heartbeat
// replies. Datanodes hold the published keys in a [KeySet]; they hold no
// secret that can mint a token.
//
// # Tokens
//
// A token is a JWT (alg EdDSA, header kid) carrying the user (sub), the inode
// id, an access mode set ([Access]), exp/nbf/iat and, for block-scoped tokens,
// the block id and generation stamp. The [Issuer] works in one of three modes
// ([Mode]): one token per block (the HDFS baseline), one per response scoped
// to the file, or that per-response token cached and reused for part of its
// lifetime (the default), so a cache hit costs no signature (HDFS-1081).
//
// The [Verifier] checks size, signature with alg pinned to EdDSA, kid, time
// window with a clock-skew allowance, and scope. It caches verified tokens in
// a sharded cache with no global lock (KUDU-3210); a hit skips only the
// signature check, never the claim checks.
//
// # Identity
//
// [IdentityFromTLS] names the caller from a verified client certificate;
// [GenerateCA], [IssueCert], [ServerTLSConfig] and [ClientTLSConfig] build the
// mutual-TLS material.
//
// All failures are *errs.Error: errs.Unauthenticated when the token cannot be
// trusted (missing, malformed, oversized, bad signature, unknown key, expired,
// not yet valid) and errs.Permission when a trusted token does not cover the
// request (wrong inode, wrong access mode, wrong block). Messages name the
// reason and never contain key material.
package security
