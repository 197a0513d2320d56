package webhdfs

import (
	"net/http"
	"sort"
	"strings"
)

// Op is one WebHDFS operation: the HTTP method Hadoop's specification
// gives it, whether blockfs serves it, and the handlers that serve it on
// each kind of server. A known op that blockfs does not serve is answered
// with UnsupportedOperationException (400), an unknown one, or a known one
// under another method, with IllegalArgumentException (400), as Hadoop
// does.
type Op struct {
	Name   string
	Method string
	// Why is empty for a served op, else why blockfs does not serve it.
	Why string
	// Redirect ops are answered by the namenode with 307 to a datanode,
	// which moves the bytes.
	Redirect bool

	// namenode serves the op on a namenode (NamenodeDoor): the whole op,
	// or for a Redirect op its first step.
	namenode namenodeHandler
	// datanode serves a Redirect op's data step on a datanode
	// (DatanodeDoor); nil for every other op.
	datanode datanodeHandler
}

// Supported reports whether blockfs serves op.
func (o Op) Supported() bool { return o.Why == "" }

const (
	whyRepl    = "blockfs cannot change a file's replication after it is created"
	whyNoXAttr = "blockfs has no ACLs, snapshot diffs, storage-type quotas, storage policies, erasure coding, symlinks or delegation tokens"
	whyConcat  = "blockfs cannot concatenate files"
)

// ops is the table of every operation of Hadoop's WebHDFS specification
// that blockfs knows by name: the one list both doors dispatch from, so
// serving a new op is one row here and its handlers.
var ops = map[string]Op{
	// Served: metadata on the namenode (namenode_meta.go).
	"GETFILESTATUS":         {Name: "GETFILESTATUS", Method: http.MethodGet, namenode: (*NamenodeDoor).getFileStatus},
	"LISTSTATUS":            {Name: "LISTSTATUS", Method: http.MethodGet, namenode: (*NamenodeDoor).listStatus},
	"LISTSTATUS_BATCH":      {Name: "LISTSTATUS_BATCH", Method: http.MethodGet, namenode: (*NamenodeDoor).listStatusBatch},
	"GETCONTENTSUMMARY":     {Name: "GETCONTENTSUMMARY", Method: http.MethodGet, namenode: (*NamenodeDoor).contentSummary},
	"GETFILEBLOCKLOCATIONS": {Name: "GETFILEBLOCKLOCATIONS", Method: http.MethodGet, namenode: (*NamenodeDoor).blockLocations},
	"GET_BLOCK_LOCATIONS":   {Name: "GET_BLOCK_LOCATIONS", Method: http.MethodGet, namenode: (*NamenodeDoor).locatedBlocks},
	"GETFILECHECKSUM":       {Name: "GETFILECHECKSUM", Method: http.MethodGet, namenode: (*NamenodeDoor).checksum},
	"GETHOMEDIRECTORY":      {Name: "GETHOMEDIRECTORY", Method: http.MethodGet, namenode: (*NamenodeDoor).homeDirectory},
	"GETTRASHROOT":          {Name: "GETTRASHROOT", Method: http.MethodGet, namenode: (*NamenodeDoor).trashRoot},
	"MKDIRS":                {Name: "MKDIRS", Method: http.MethodPut, namenode: (*NamenodeDoor).mkdirs},
	"RENAME":                {Name: "RENAME", Method: http.MethodPut, namenode: (*NamenodeDoor).rename},
	"SETPERMISSION":         {Name: "SETPERMISSION", Method: http.MethodPut, namenode: (*NamenodeDoor).setPermission},
	"SETOWNER":              {Name: "SETOWNER", Method: http.MethodPut, namenode: (*NamenodeDoor).setOwner},
	"SETQUOTA":              {Name: "SETQUOTA", Method: http.MethodPut, namenode: (*NamenodeDoor).setQuota},
	"GETQUOTAUSAGE":         {Name: "GETQUOTAUSAGE", Method: http.MethodGet, namenode: (*NamenodeDoor).quotaUsage},
	"DELETE":                {Name: "DELETE", Method: http.MethodDelete, namenode: (*NamenodeDoor).delete},
	// Served: attributes, times, truncate (namenode_attrs.go).
	"GETXATTRS": {Name: "GETXATTRS", Method: http.MethodGet, namenode: (*NamenodeDoor).getXAttrs},
	// Served: HDFS snapshots (namenode_snapshot.go).
	"ALLOWSNAPSHOT":                 {Name: "ALLOWSNAPSHOT", Method: http.MethodPut, namenode: (*NamenodeDoor).allowSnapshot},
	"DISALLOWSNAPSHOT":              {Name: "DISALLOWSNAPSHOT", Method: http.MethodPut, namenode: (*NamenodeDoor).disallowSnapshot},
	"CREATESNAPSHOT":                {Name: "CREATESNAPSHOT", Method: http.MethodPut, namenode: (*NamenodeDoor).createSnapshot},
	"RENAMESNAPSHOT":                {Name: "RENAMESNAPSHOT", Method: http.MethodPut, namenode: (*NamenodeDoor).renameSnapshot},
	"DELETESNAPSHOT":                {Name: "DELETESNAPSHOT", Method: http.MethodDelete, namenode: (*NamenodeDoor).deleteSnapshot},
	"GETSNAPSHOTTABLEDIRECTORYLIST": {Name: "GETSNAPSHOTTABLEDIRECTORYLIST", Method: http.MethodGet, namenode: (*NamenodeDoor).snapshottableDirs},
	"LISTXATTRS":                    {Name: "LISTXATTRS", Method: http.MethodGet, namenode: (*NamenodeDoor).listXAttrs},
	"SETXATTR":                      {Name: "SETXATTR", Method: http.MethodPut, namenode: (*NamenodeDoor).setXAttr},
	"REMOVEXATTR":                   {Name: "REMOVEXATTR", Method: http.MethodPut, namenode: (*NamenodeDoor).removeXAttr},
	"SETTIMES":                      {Name: "SETTIMES", Method: http.MethodPut, namenode: (*NamenodeDoor).setTimes},
	"TRUNCATE":                      {Name: "TRUNCATE", Method: http.MethodPost, namenode: (*NamenodeDoor).truncate},
	// Served: data, redirected by the namenode (namenode_data.go) to a
	// datanode (datanode_data.go).
	"OPEN":   {Name: "OPEN", Method: http.MethodGet, Redirect: true, namenode: (*NamenodeDoor).open, datanode: (*DatanodeDoor).open},
	"CREATE": {Name: "CREATE", Method: http.MethodPut, Redirect: true, namenode: (*NamenodeDoor).create, datanode: (*DatanodeDoor).create},
	// APPEND has HDFS's NEW_BLOCK semantics: the appended bytes start a
	// new block after the file's last one.
	"APPEND": {Name: "APPEND", Method: http.MethodPost, Redirect: true, namenode: (*NamenodeDoor).append, datanode: (*DatanodeDoor).append},

	// Known, not served.
	"SETREPLICATION": {Name: "SETREPLICATION", Method: http.MethodPut, Why: whyRepl},
	"CONCAT":         {Name: "CONCAT", Method: http.MethodPost, Why: whyConcat},
}

func init() {
	for _, n := range []string{"GETDELEGATIONTOKEN", "GETACLSTATUS", "CHECKACCESS",
		"GETALLSTORAGEPOLICY", "GETSTORAGEPOLICY", "GETSNAPSHOTDIFF",
		"GETSERVERDEFAULTS", "GETECPOLICY", "GETLINKTARGET", "GETFILELINKSTATUS",
		"GETSTATUS", "GETSNAPSHOTLIST", "GETECPOLICIES", "GETECCODECS", "GETTRASHROOTS"} {
		ops[n] = Op{Name: n, Method: http.MethodGet, Why: whyNoXAttr}
	}
	for _, n := range []string{"CREATESYMLINK", "RENEWDELEGATIONTOKEN", "CANCELDELEGATIONTOKEN", "MODIFYACLENTRIES",
		"REMOVEACLENTRIES", "REMOVEDEFAULTACL", "REMOVEACL", "SETACL", "SETSTORAGEPOLICY",
		"SETQUOTABYSTORAGETYPE", "SATISFYSTORAGEPOLICY", "ENABLEECPOLICY", "DISABLEECPOLICY", "SETECPOLICY"} {
		ops[n] = Op{Name: n, Method: http.MethodPut, Why: whyNoXAttr}
	}
	for _, n := range []string{"UNSETSTORAGEPOLICY", "UNSETECPOLICY"} {
		ops[n] = Op{Name: n, Method: http.MethodPost, Why: whyNoXAttr}
	}
}

// methods returns the HTTP methods of the ops that served reports true
// for, sorted: the routes a door registers.
func methods(served func(Op) bool) []string {
	var out []string
	for _, o := range Ops() {
		if served(o) && (len(out) == 0 || out[len(out)-1] != o.Method) {
			out = append(out, o.Method)
		}
	}
	return out
}

// Ops returns every known op, sorted by method and name (for docs and tests).
func Ops() []Op {
	out := make([]Op, 0, len(ops))
	for _, o := range ops {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Method != out[j].Method {
			return out[i].Method < out[j].Method
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LookupOp finds the op a request names (case-insensitive, as Hadoop
// parses it) and checks it is served under method. Errors are the
// *Error to answer with.
func LookupOp(method, name string) (Op, error) {
	if name == "" {
		return Op{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "op": no op given`)
	}
	o, ok := ops[strings.ToUpper(name)]
	if !ok || o.Method != method {
		return Op{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "op": `+quoteParam(name)+" is not an operation of HTTP "+method)
	}
	if !o.Supported() {
		return o, Errorf(Unsupported, o.Name+" is not supported: "+o.Why)
	}
	return o, nil
}
