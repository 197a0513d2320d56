// Package namespace is the blockfs inode tree: directories, files, each
// file's ordered block list, permissions, and the namespace image that is
// the namenode's Raft snapshot.
//
// The package is pure and deterministic. It does no I/O except through the
// io.Writer / io.Reader handed to WriteImage and ReadImage, reads no clock
// (every time is an argument, in Unix milliseconds), uses no randomness and
// starts no goroutines. Block ids and generation stamps come from counters
// kept in the tree (AllocBlock) and saved in the image, so every replica of
// the Raft state machine that applies the same commands ends with the same
// tree, and Hash proves it.
//
// A *Tree is not synchronized. The namenode guards it with a sync.RWMutex:
// mutations under the write lock, reads (Stat, File, FileByID, List,
// BlockInode, ForEachBlock, Counts, Hash, WriteImage, Check*) under the read
// lock. Read methods never modify the tree, not even a cache.
//
// Every mutation validates fully before it changes anything, so a failed
// call leaves the tree exactly as it was. Errors are *errs.Error with a
// stable Kind (Invalid, NotFound, Exist, NotEmpty, NotDir, IsDir,
// Precondition, Exhausted, Permission, Corrupt, IO).
//
// Block slices are copy-on-write: File and FileByID return the tree's own
// slice without copying (GetBlockLocations on a 1000-block file costs no
// allocation), and no later mutation ever writes into memory a reader may
// hold. Appends go into spare capacity that was never part of a published
// slice; changing an existing element (a block's length) copies the slice.
//
// Children of a directory are a slice sorted by name (binary-search
// insert, paging for List) plus, from 64 children on, a name -> child map
// for lookups. Inserting into a directory of n children moves n/2 pointers
// on average, as HDFS's sorted child list does.
//
// Permissions follow HDFS: the superuser bypasses every check; resolving a
// path needs Exec on every ancestor directory; then the owner, group or
// other bits of the target (only the first class that matches the user).
// The namenode calls, before each operation:
//
//	mkdirs, create        CheckParentAccess(Write) (nearest existing ancestor);
//	                      create with Overwrite of an existing file also CheckAccess(Write)
//	delete                CheckParentAccess(Write|Exec) and CheckStickyBit
//	rename                CheckParentAccess(src, Write|Exec), CheckStickyBit(src),
//	                      CheckParentAccess(dst, Write|Exec) (dst/base(src) when dst
//	                      is an existing directory)
//	list                  CheckAccess(Read|Exec)
//	stat                  CheckAccess(0) (traverse only)
//	open/getBlockLocations CheckAccess(Read)
//	addBlock, complete    CheckAccess(Write)
//	setPermission/owner   CheckOwner
package namespace
