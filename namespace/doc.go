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
// BlockInode, ForEachBlock, Counts, Hash, WriteImage, Check*, and a
// Session's ContentSummary and QuotaUsage) under the read lock. Read
// methods never modify the tree, not even a cache.
//
// Directories may carry HDFS's namespace and space quotas (quota.go): the
// usage of a directory with a quota is kept by every mutation on the
// ancestors it resolved, checked before anything changes.
//
// Paths are parsed once, where they enter: ParsePath returns a Path, a
// validated value, and every lookup of the Tree and of a Session takes
// one, so the tree never re-validates a path (it only compares the
// path's length and longest component with its own limits). A Session
// carries the operation it serves (Tree.As(caller, op)), and every error
// it returns names that op, the caller's (the RPC method), not one the
// tree made up; the Tree's own methods name themselves
// ("namespace.Tree.Mkdirs"), as package errs says.
//
// Every mutation validates fully before it changes anything, so a failed
// call leaves the tree exactly as it was. Errors are *errs.Error with a
// stable Kind (Invalid, NotFound, Exist, NotEmpty, NotDir, IsDir,
// Precondition, Exhausted, Permission, Corrupt, IO).
//
// Block slices are copy-on-write: for a file of two or more blocks, File
// and FileByID return the tree's own slice without copying
// (GetBlockLocations on a 1000-block file costs no allocation), and no
// later mutation ever writes into memory a reader may hold. Appends go
// into spare capacity that was never part of a published slice; changing
// an existing element (a block's length or CRC) copies the slice. A file's
// only block is kept in its inode (inode.go) and changed in place, so for
// a one-block file they return a new one-element slice (32 bytes). A block's CRC32C is set once, when its writer commits the block
// (AddBlock's previous block, Complete); a different CRC for it later is
// refused (Precondition).
//
// Snapshots hold no lock of the tree's while they encode: Tree.View freezes
// the tree by copy-on-write (view.go) and View.Encode streams its image,
// reading each inode under the view's own mutex, which touch takes too. For
// that, every mutation calls
// t.touch(n) on each existing inode before it changes any field of it
// (insertChild and removeChild do so for the parent, writableFile for the
// file it returns); a new mutation must follow the same rule.
//
// Children of a directory are sorted by name, searched by binary search
// (lookups, inserts, paging for List); there is no name map. They are kept
// in chunks of at most 128 (children.go), so an insert moves at most 128
// pointers, and a snapshot that freezes a directory copies its chunk
// pointers, not its children: a mutation under an open view copies only the
// one chunk it changes.
//
// An inode is 96 bytes (inode.go): a file's only block is inline, small
// fields share one header word, and a directory's children, an open
// file's writer and a longer file's block slice are behind one pointer.
//
// Permissions follow HDFS's FSPermissionChecker (the full table is in
// docs/SECURITY.md). Tree.As(caller) returns a Session whose operations
// resolve the path once, checking Exec on every directory they look a name
// up in, then check the caller's access on the inodes that resolution
// found (the owner, group or other bits of each, only the first class
// that matches), and change nothing unless every check passes:
//
//	stat                   traverse only
//	open (File)            Read on the file
//	list                   Read|Exec on a directory (a file: traverse only)
//	mkdirs                 Write|Exec on the last existing ancestor
//	create                 Write|Exec on the parent; overwrite also Write on the
//	                       file and the parent's sticky bit
//	delete                 Write|Exec on the parent, the sticky bit; with
//	                       contents, rwx on every non-empty directory beneath
//	rename                 Write|Exec on both parents, the sticky bit on the
//	                       source and on an existing destination
//	append                 Write on the file; the caller becomes its writer
//	addBlock, complete,    only the writer recorded at create or append
//	abandonBlock           (client id and user), superuser included
//	setPermission          the owner
//	setOwner               owner change: superuser; group change: the owner,
//	                       into a group they belong to
//
// A superuser (Policy: the superuser name or a member of the supergroup)
// passes every check except the writer check. The Tree's own methods are
// the system's: they check nothing.
package namespace
