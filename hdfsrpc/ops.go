package hdfsrpc

// ops is the door's method table: every ClientProtocol method it serves,
// whether it writes, and its translation. A method not here is answered
// RpcNoSuchMethodException by the IPC server.
var ops = map[string]op{
	// The namespace (namespace.go).
	"getFileInfo":       {run: unary(getFileInfo)},
	"getFileLinkInfo":   {run: unary(getFileLinkInfo)},
	"getListing":        {run: unary(getListing)},
	"mkdirs":            {write: true, run: unary(mkdirs)},
	"delete":            {write: true, run: unary(deletePath)},
	"rename":            {write: true, run: unary(rename)},
	"rename2":           {write: true, run: unary(rename2)},
	"setPermission":     {write: true, run: unary(setPermission)},
	"setOwner":          {write: true, run: unary(setOwner)},
	"getContentSummary": {run: unary(getContentSummary)},
	"getQuotaUsage":     {run: unary(getQuotaUsage)},
	"setQuota":          {write: true, run: unary(setQuota)},
	"isFileClosed":      {run: unary(isFileClosed)},
	// getPreferredBlockSize: the file's block size.
	"getPreferredBlockSize": {run: unary(getPreferredBlockSize)},

	// Attributes, times, truncate (attrs.go).
	"setXAttr":    {write: true, run: unary(setXAttr)},
	"getXAttrs":   {run: unary(getXAttrs)},
	"listXAttrs":  {run: unary(listXAttrs)},
	"removeXAttr": {write: true, run: unary(removeXAttr)},
	"setTimes":    {write: true, run: unary(setTimes)},
	"truncate":    {write: true, run: unary(truncate)},

	// HDFS snapshots (snapshots.go).
	"allowSnapshot":              {write: true, run: unary(allowSnapshot)},
	"disallowSnapshot":           {write: true, run: unary(disallowSnapshot)},
	"createSnapshot":             {write: true, run: unary(createSnapshot)},
	"deleteSnapshot":             {write: true, run: unary(deleteSnapshot)},
	"renameSnapshot":             {write: true, run: unary(renameSnapshot)},
	"getSnapshottableDirListing": {run: unary(getSnapshottableDirListing)},

	// Files being written (files.go).
	"create":                 {write: true, run: unary(create)},
	"append":                 {write: true, run: unary(appendFile)},
	"addBlock":               {write: true, run: unary(addBlock)},
	"abandonBlock":           {write: true, run: unary(abandonBlock)},
	"complete":               {write: true, run: unary(complete)},
	"fsync":                  {write: true, run: unary(fsync)},
	"renewLease":             {write: true, run: unary(renewLease)},
	"recoverLease":           {write: true, run: unary(recoverLease)},
	"updateBlockForPipeline": {write: true, run: unary(updateBlockForPipeline)},
	"updatePipeline":         {write: true, run: unary(updatePipeline)},
	"getBlockLocations":      {run: unary(getBlockLocations)},

	// The file system (server.go).
	"getServerDefaults":    {run: unary(getServerDefaults)},
	"getFsStats":           {run: unary(getFsStats)},
	"getDataEncryptionKey": {run: unary(getDataEncryptionKey)},
}
