// Package lbm is the datanode block store: log-block containers after
// Kudu's log block manager, with per-chunk and per-block CRC32C,
// encryption at rest and three startup replay paths (Kudu's streaming,
// buffered streaming and in-memory, KUDU-3778/3779).
//
// # Containers
//
// A container is <id>.data + <id>.metadata in one data directory (<id> is
// 32 random hex digits). Block bytes are written into the data file at
// 4096-aligned offsets (block 0 holds the data file header; the first block
// is at 4096), each followed by its chunk CRC table; a byte range, once
// written, is never reused. The metadata file is an append-only log of
// CREATE/CREATE2, DELETE, RBW and RBW-drop records after a file header. Put writes and
// fsyncs the block bytes and table, then appends and fsyncs the CREATE2
// record, then publishes the block; Delete appends and fsyncs a DELETE,
// then punches a hole (PUNCH_HOLE|KEEP_SIZE) over the block. A container is
// full when its data file reaches Config.MaxContainerSize or it has held
// Config.MaxBlocksPerContainer blocks; full is sticky. A full container
// with no live blocks is removed (data file, then metadata, then a
// directory fsync). A full container whose live/created ratio falls to
// Config.CompactLiveRatio has its metadata rewritten with the live CREATEs
// (temp file, fsync, rename, directory fsync); the rewritten header carries
// a "sealed" flag so the container stays full.
//
// # Streamed writes and chunk checksums
//
// Create reserves the id and takes a container as its only writer until
// Commit or Abort (the declared length is known up front; the container
// limit is soft, as for a PutBatch's first block). BlockWriter.Write takes
// whole chunks of bytesPerChecksum (the block's last may be short) with
// one CRC32C per chunk, verifies them all, encrypts at the absolute file
// offset and writes straight into the data file; the CRC table (4 bytes a
// chunk) and the running whole-block CRC32C are all it keeps in memory.
// Commit writes the table right after the block's bytes, fdatasyncs,
// appends and fsyncs a CREATE2 record, and publishes. Abort punches what
// was written and frees the id. A crash before the CREATE2 is durable
// leaves only unreferenced bytes: the block does not exist after replay
// (an open-ended write that was synced is a waiting replica, below).
//
// CreateWith adds HDFS write semantics. An open-ended writer
// (CreateOptions.OpenEnded) has a maximum length, not a declared one;
// WriteAt lets every call end with a short chunk (an hflush of a partial
// chunk) and the next call rewrite that chunk from its start, provided the
// bytes already stored are the same (checked against the chunk's CRC): the
// same plaintext at the same offset is the same ciphertext, so no CTR
// keystream position encrypts two plaintexts. The writer keeps a running
// CRC over whole chunks and the short chunk's CRC, combined once at Commit
// (internal/base/crc32c.Combine). Truncate (pipeline and block recovery) cuts
// the write back, recomputing the CRCs from the bytes read back; bytes
// written again past the cut must be the bytes written there before.
// SetGenStamp raises the genstamp Commit records; BlockWriter.ReadChunks
// serves the bytes written so far. A Replace writer (CreateOptions.Replace)
// writes a new version of a live id with a higher generation stamp into
// fresh space while the old version stays readable; Commit switches the
// index, then releases the old version: a DELETE in its container (after
// the new CREATE2 is durable) and a punched hole, or, in the same
// container, only the hole (replay keeps the later CREATE).
//
// # Group commit of small blocks
//
// A writer of a block no larger than Config.GroupCommitMax (declared, or
// so far for an open-ended one; never a Replace) takes no container: it
// keeps the verified bytes and CRCs in memory. Its Commit queues the block;
// one committer at a time (the first to find none running) takes every
// block queued and stores them as PutBatch does: each block and its table
// in one write at the next free offset of a container, one fdatasync of
// the data file, the CREATE2 records in one append, one fsync of the
// metadata, then publication. Blocks queued meanwhile go out as the next
// group, and a lone block goes at once. What reaches the disk, and in
// which order, is what Commit one block at a time writes, so replay, the
// crash rules and the format are unchanged. An open-ended writer that
// grows past the limit, Syncs or Truncates first writes its bytes into a
// container and goes on as any other writer.
//
// # Replicas waiting to be recovered
//
// Sync of an open-ended writer (an hsync) fdatasyncs the bytes written so
// far, then appends and fsyncs an RBW record naming them (id, inode,
// genstamp, offset, length, bytes per checksum, their CRC32C). In a
// container the last RBW of an id stands until a later CREATE/CREATE2 of
// the id (Commit) or RBW-drop (Abort after a Sync, RecoverWaiting,
// DropWaiting). After Open, a standing RBW whose id is not live with a
// generation stamp at least its own is a waiting replica (HDFS's RWR):
// Store.Waiting and WaitingReplicas list it; it is not in Stat, Blocks or
// reads. RecoverWaiting reads its bytes back and checks their CRC
// (errs.Corrupt and the replica dropped on a mismatch), commits a prefix
// as a new block under a higher generation stamp (replacing a lower live
// version), then appends an RBW-drop and punches the bytes. An RBW's bytes
// keep their range (the next block starts past them) and a container
// holding a waiting replica is neither compacted nor removed.
// BlockWriter.Abandon lets a writer go as a crash would (a datanode
// shutting down), so its synced bytes come back as a waiting replica.
//
// ReadChunks (and Read) of a chunked block read only the chunks a range
// touches and their slice of the table, with two positioned reads, and
// verify each chunk: skip by offset, never by reading and discarding
// (CASSANDRA-14415). A block stored with the old CREATE record (no table)
// is read and verified whole.
//
// # On-disk format (all integers little-endian, all CRCs CRC-32C)
//
//	encryption header (encrypted files only, 128 bytes, cleartext):
//	  0 "BFSENC01" | 8 version=1 | 9 alg=1 (AES-256-CTR) | 10 zero[2] |
//	  12 GCM nonce[12] | 24 AES-256-GCM_serverKey(fileKey[32] ‖ baseIV[16],
//	  aad = bytes 0..12)[64] | 88 zero[40]
//	file header (16 bytes; right after the encryption header if any):
//	  0 magic "BFSLBMM1" (metadata) or "BFSLBMD1" (data) | 8 version u16=1 |
//	  10 flags u16 (bit 0: sealed) | 12 crc32c(bytes 0..12) u32
//	record frame: len u32 | crc32c(len) u32 | body[len] | crc32c(body) u32
//	CREATE body (56 bytes): 0 type=1 | 1 zero[3] | 4 crc32c(block) u32 |
//	  8 block id u64 | 16 inode u64 | 24 genstamp u64 | 32 offset u64 |
//	  40 length u64 | 48 timestamp µs i64
//	CREATE2 body (64 bytes): the CREATE fields with type=3, then
//	  56 bytes per checksum u32 | 60 zero[4]
//	data file: block bytes at offset, then (CREATE2 only) the chunk CRC
//	  table, crc32c of each bytes-per-checksum chunk as u32, at
//	  offset+length; the next block starts at or after the 4096-aligned end
//	DELETE body (16 bytes): 0 type=2 | 1 zero[7] | 8 block id u64
//	RBW body (64 bytes): 0 type=4 | 1 zero[3] | 4 crc32c(bytes so far) u32 |
//	  8 block id u64 | 16 inode u64 | 24 genstamp u64 | 32 offset u64 |
//	  40 length so far u64 | 48 timestamp µs i64 | 56 bytes per checksum u32 |
//	  60 zero[4]  (no chunk CRC table follows the bytes)
//	RBW-drop body (24 bytes): 0 type=5 | 1 zero[7] | 8 block id u64 |
//	  16 genstamp of the dropped RBW u64
//	server key file (48 bytes, mode 0600): 0 "BFSKEY01" | 8 alg=1 |
//	  9 zero[3] | 12 crc32c(key) u32 | 16 key[32]
//
// docs/FORMATS.md ("Datanode block store (lbm)") has the full tables.
//
// # Encryption
//
// With Config.Encrypt every new file gets a random AES-256 key and base IV,
// wrapped by the server key (Config.KeyFile, created if missing). File
// bytes at offset off >= 128 are XORed with AES-CTR keystream position off:
// counter block = baseIV + off/16, skipping off%16 bytes, so every slice is
// en/decrypted independently at its absolute offset. A fileCipher holds an
// immutable cipher.Block and is shared without locks.
//
// # Replay
//
// Open lists the data dirs and replays all containers on a bounded worker
// pool. A metadata file whose payload is at most Config.InmemReplayThreshold
// bytes, and that fits in what is left of Config.ReplayMemoryBudget, is
// read with ONE ReadAt and parsed from memory: the all-zero tail is located
// on the ciphertext first, then the records region is decrypted in one CTR
// pass in place. Otherwise the file is streamed: the streaming parser
// reads each record as two slices (8-byte header, then body+crc) and
// decrypts each at its offset. With Config.StreamingReplay =
// StreamingPread (the default) each slice is one ReadAt, as Kudu does;
// with StreamingBuffered the slices are served from a 1 MiB readahead
// window refilled by one ReadAt, so a file costs about size/1 MiB reads
// (not charged to ReplayMemoryBudget). Both readers run the same parser.
// OpenStats.StreamingContainers counts containers streamed by either
// reader; the replay-seconds metric labels them "streaming" and
// "buffered-streaming". On all three paths, with no allocation per
// record:
//   - a frame whose on-disk bytes are zero up to EOF (or whose header is
//     valid and whose body+crc are zero up to EOF) is a crash tail, and a
//     frame cut short by EOF is a truncated record: the file is truncated
//     there and a warning logged; nothing acknowledged is lost, because
//     acknowledged records were fsynced;
//   - any other checksum mismatch is corruption naming the file and
//     offset: the container is set aside (both files renamed to
//     <name>.corrupt-<unix>, never deleted; counted in
//     blockfs_lbm_containers_set_aside_total; listed by SetAside) and Open
//     serves the rest, its blocks missing from Blocks() so the namenode
//     re-replicates them. With Config.FailOnCorruptContainer, or when every
//     one of several containers is corrupt, Open fails with the
//     errs.Corrupt error instead.
//
// A CREATE/CREATE2 of a block live in the same container with a lower
// generation stamp replaces it (a Replace commit; the older extent is
// garbage, counted dead for compaction); equal or higher is corruption.
// Across containers, once all are replayed: a block live in two
// containers keeps the higher generation stamp, and the other container
// gets a DELETE (fsynced) and a punched hole, logged at Info (a Replace
// commit whose DELETE a crash cut off); equal generation stamps are
// corruption (the container merged second is set aside).
//
// The data file is never read by replay (only stat'ed); its header is read
// lazily on the first read or write. After replay new blocks start past the
// data file's end, so bytes a crash left uncommitted keep their range and
// no CTR keystream position ever encrypts two plaintexts.
//
// # Faults
//
// All file I/O goes through FS (OSFS, MemFS for crash and fault tests,
// CountingFS to count read calls). An I/O error while writing to a data dir
// marks the dir failed (FailedDirs); new blocks go to the other dirs and
// blocks already there keep being served if the disk still reads. ENOSPC
// is not a failure: the dir is full (FullDirs), gets no new blocks for
// Config.FullRetry, then is tried again, and is back in service with the
// first block that fits (a full disk comes back when space is freed; a
// failed one only at restart).
package lbm
