package security

// HadoopRowPrefix prefixes the rows of the HDFS RPC door (package hdfsrpc):
// one per ClientProtocol method it serves, "hadoop.ClientProtocol/<method>".
const HadoopRowPrefix = "hadoop.ClientProtocol/"

// The HDFS RPC door's methods. Its caller is always a user, named by its
// connection under Hadoop's simple authentication, and runs through the
// client service's own checks after this row; writes pass the per-user
// rate limit like every user write.
var (
	hadoopReads = []string{
		"getFileInfo", "getFileLinkInfo", "getListing", "getContentSummary", "getQuotaUsage",
		"isFileClosed", "getPreferredBlockSize", "getBlockLocations",
		"getServerDefaults", "getFsStats", "getDataEncryptionKey", "getXAttrs", "listXAttrs",
		"getSnapshottableDirListing",
	}
	hadoopWrites = []string{
		"mkdirs", "delete", "rename", "rename2", "setPermission", "setOwner", "setQuota",
		"create", "append", "addBlock", "abandonBlock", "complete", "fsync", "renewLease",
		"recoverLease", "updateBlockForPipeline", "updatePipeline", "setXAttr", "removeXAttr",
		"setTimes", "truncate", "allowSnapshot", "disallowSnapshot", "createSnapshot", "deleteSnapshot",
		"renameSnapshot",
	}
)

func addHadoopRows(p map[string]Rule) {
	for _, m := range hadoopReads {
		p[HadoopRowPrefix+m] = Rule{Roles: users}
	}
	for _, m := range hadoopWrites {
		p[HadoopRowPrefix+m] = Rule{Roles: users, Write: true}
	}
}
