package webhdfs

import (
	"strconv"
	"strings"

	"github.com/blockfs/blockfs/api"
)

// FileStatus is Hadoop's FileStatus JSON object. accessTime is the last
// SETTIMES's (else a file's modification time, a directory's 0); blockfs
// has one storage policy (0, unspecified).
type FileStatus struct {
	AccessTime       int64  `json:"accessTime"`
	BlockSize        uint64 `json:"blockSize"`
	ChildrenNum      uint64 `json:"childrenNum"`
	FileID           uint64 `json:"fileId"`
	Group            string `json:"group"`
	Length           uint64 `json:"length"`
	ModificationTime int64  `json:"modificationTime"`
	Owner            string `json:"owner"`
	PathSuffix       string `json:"pathSuffix"`
	Permission       string `json:"permission"`
	Replication      uint32 `json:"replication"`
	StoragePolicy    int    `json:"storagePolicy"`
	Type             string `json:"type"`
}

// ToFileStatus converts a namenode FileStatus; suffix is the pathSuffix
// (empty for GETFILESTATUS and for a file listed by itself, the entry's
// name in a directory listing).
func ToFileStatus(st *api.FileStatus, suffix string) FileStatus {
	fs := FileStatus{
		FileID: st.InodeId, Group: st.Group, Owner: st.Owner, PathSuffix: suffix,
		ModificationTime: st.MtimeUnixMs, AccessTime: st.AtimeUnixMs, Permission: strconv.FormatUint(uint64(st.Mode&0o1777), 8),
		Type: "FILE", Length: st.Length, BlockSize: st.BlockSize, Replication: st.Replication,
	}
	if st.IsDir {
		fs.Type, fs.ChildrenNum, fs.Length, fs.BlockSize, fs.Replication = "DIRECTORY", st.Children, 0, 0, 0
	}
	return fs
}

// BaseName is the last component of p ("" for the root).
func BaseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// FileStatusJSON is the GETFILESTATUS answer.
type FileStatusJSON struct {
	FileStatus FileStatus `json:"FileStatus"`
}

// FileStatuses is a list of FileStatus objects.
type FileStatuses struct {
	FileStatus []FileStatus `json:"FileStatus"`
}

// FileStatusesJSON is the LISTSTATUS answer.
type FileStatusesJSON struct {
	FileStatuses FileStatuses `json:"FileStatuses"`
}

// DirectoryListingJSON is the LISTSTATUS_BATCH answer. remainingEntries
// is 0 when the listing is complete and, as blockfs does not count what
// is left, 1 when at least one more entry follows (clients page until it
// is 0).
type DirectoryListingJSON struct {
	DirectoryListing struct {
		PartialListing struct {
			FileStatuses FileStatuses `json:"FileStatuses"`
		} `json:"partialListing"`
		RemainingEntries int `json:"remainingEntries"`
	} `json:"DirectoryListing"`
}

// ContentSummary is Hadoop's ContentSummary object; a quota that is not
// set is -1, and blockfs has no storage-type quotas (typeQuota is {}).
type ContentSummary struct {
	DirectoryCount int64          `json:"directoryCount"`
	FileCount      int64          `json:"fileCount"`
	Length         int64          `json:"length"`
	Quota          int64          `json:"quota"`
	SpaceConsumed  int64          `json:"spaceConsumed"`
	SpaceQuota     int64          `json:"spaceQuota"`
	TypeQuota      map[string]any `json:"typeQuota"`
}

// QuotaUsage is Hadoop's QuotaUsage object, with ContentSummary's
// conventions.
type QuotaUsage struct {
	FileAndDirectoryCount int64          `json:"fileAndDirectoryCount"`
	Quota                 int64          `json:"quota"`
	SpaceConsumed         int64          `json:"spaceConsumed"`
	SpaceQuota            int64          `json:"spaceQuota"`
	TypeQuota             map[string]any `json:"typeQuota"`
}

// QuotaUsageJSON is the GETQUOTAUSAGE answer.
type QuotaUsageJSON struct {
	QuotaUsage QuotaUsage `json:"QuotaUsage"`
}

// ContentSummaryJSON is the GETCONTENTSUMMARY answer.
type ContentSummaryJSON struct {
	ContentSummary ContentSummary `json:"ContentSummary"`
}

// FileChecksumJSON is the GETFILECHECKSUM answer: bytes is the checksum
// in hex and length its size in bytes (4 for COMPOSITE-CRC32C, the CRC
// big-endian, as Hadoop's CompositeCrcFileChecksum).
type FileChecksumJSON struct {
	FileChecksum struct {
		Algorithm string `json:"algorithm"`
		Bytes     string `json:"bytes"`
		Length    int    `json:"length"`
	} `json:"FileChecksum"`
}

// PathJSON is the GETHOMEDIRECTORY answer.
type PathJSON struct {
	Path string `json:"Path"`
}

// BooleanJSON is the answer of MKDIRS, RENAME and DELETE.
type BooleanJSON struct {
	Boolean bool `json:"boolean"`
}

// LocationJSON is the answer of a redirect op under noredirect=true.
type LocationJSON struct {
	Location string `json:"Location"`
}
