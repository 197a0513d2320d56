package namespace

import "fmt"

// ID is an inode id. Ids are allocated from a counter in the tree and never
// reused; the root directory is RootID.
type ID uint64

// RootID is the inode id of "/".
const RootID ID = 1

// Block is one block of a file: its id, generation stamp, length in bytes
// and, once its writer finished it, the CRC32C (Castagnoli) of its bytes.
// Two blocks name the same replica set when ID and GenStamp match.
type Block struct {
	ID, GenStamp, Length uint64
	// CRC is the CRC32C of the block's Length bytes; meaningful only when
	// HasCRC (0 is a CRC like any other). A block has none until its
	// writer commits it (AddBlock's previous block, Complete), nor when it
	// was committed before blocks carried checksums.
	CRC    uint32
	HasCRC bool
}

func (b Block) String() string { return fmt.Sprintf("blk_%d_%d", b.ID, b.GenStamp) }

// WithCRC returns b with CRC crc recorded.
func (b Block) WithCRC(crc uint32) Block {
	b.CRC, b.HasCRC = crc, true
	return b
}

// crcConflict reports whether got and have both carry a CRC and differ.
func crcConflict(got, have Block) bool {
	return got.HasCRC && have.HasCRC && got.CRC != have.CRC
}

// FileState is the life-cycle state of a file.
type FileState uint8

const (
	// UnderConstruction files are being written: AddBlock and
	// AbandonBlock apply to them.
	UnderConstruction FileState = iota
	// Complete files are closed: their block list is final. Directories
	// report Complete too.
	Complete
)

func (s FileState) String() string {
	switch s {
	case UnderConstruction:
		return "under construction"
	case Complete:
		return "complete"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Limits bound the namespace. A zero (or negative) field means the default
// from DefaultLimits; fields above the hard caps below are clamped to them.
type Limits struct {
	MaxPathLen       int // bytes in a path
	MaxComponentLen  int // bytes in one path component
	MaxBlocksPerFile int
	MaxDirItems      int // children of one directory
}

// Hard caps on Limits: they bound what ReadImage will accept.
const (
	capPathLen       = 1 << 20
	capComponentLen  = 1<<16 - 1
	capBlocksPerFile = 1 << 24
	capDirItems      = 1 << 30
)

// DefaultLimits returns the limits HDFS uses (dfs.namenode.fs-limits.*),
// with a 8000-byte path cap.
func DefaultLimits() Limits {
	return Limits{MaxPathLen: 8000, MaxComponentLen: 255, MaxBlocksPerFile: 10000, MaxDirItems: 1 << 20}
}

func (l Limits) normalize() Limits {
	d := DefaultLimits()
	fix := func(v, def, hi int) int {
		if v <= 0 {
			return def
		}
		return min(v, hi)
	}
	return Limits{
		MaxPathLen:       fix(l.MaxPathLen, d.MaxPathLen, capPathLen),
		MaxComponentLen:  fix(l.MaxComponentLen, d.MaxComponentLen, capComponentLen),
		MaxBlocksPerFile: fix(l.MaxBlocksPerFile, d.MaxBlocksPerFile, capBlocksPerFile),
		MaxDirItems:      fix(l.MaxDirItems, d.MaxDirItems, capDirItems),
	}
}

// FileInfo describes one inode. It is a copy, safe to keep.
type FileInfo struct {
	Path         string
	ID, Parent   ID // Parent is 0 for the root
	Name         string
	IsDir        bool
	Owner, Group string
	Mode         uint32 // permission bits 0777 plus sticky 01000
	MtimeMs      int64
	Replication  uint32    // files only
	BlockSize    uint64    // files only
	Length       uint64    // files: sum of block lengths
	NumBlocks    int       // files only
	State        FileState // Complete for directories
	Children     int       // directories only
	// Writer is the client that holds a file under construction open
	// for writing; zero for complete files and directories.
	Writer Writer
	// AtimeMs is the access time: the last SetTimes's, else a file's
	// mtime and a directory's 0 (xattr.go says why).
	AtimeMs int64
}

// Writer identifies the client writing a file under construction: the
// client id and user of the Create that made it. A writer with an empty
// Client (its Create sent no client id) is identified by User alone.
type Writer struct {
	Client, User string
}

// Replication bounds.
const (
	MinReplication = 1
	MaxReplication = 32
)

const (
	permMask    = 01777 // the mode bits a caller may set
	stickyBit   = 01000
	maxUserName = 255 // bytes in an owner or group name
)
