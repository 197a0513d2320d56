package hdfsrpc

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/errs/hadoop"
)

// HadoopIllegalArgument is the class HDFS's namenode raises for a bad
// argument (a negative truncate length, a bad xattr flag); clients match
// it, where WebHDFS's answers name java.lang.IllegalArgumentException.
const HadoopIllegalArgument = "org.apache.hadoop.HadoopIllegalArgumentException"

// Exception is the door's mapping of an error to Hadoop's exception class
// and message (errs/hadoop's, with HDFS's wording), for Config.Exception.
func Exception(err error) (class, message string) {
	ex := hadoop.For("", "", err)
	if errs.KindOf(err) == errs.Invalid {
		ex.Class = HadoopIllegalArgument
	}
	return ex.Class, ex.Message
}

// pathFields are the request fields that name a path.
var pathFields = map[protoreflect.Name]bool{
	"src": true, "dst": true, "path": true, "filename": true, "snapshotRoot": true,
}

// cleanPaths drops trailing slashes from the paths a request names
// ("/a/b/" is "/a/b"), as HDFS's namenode resolves them.
func cleanPaths(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() == protoreflect.StringKind && !fd.IsList() && pathFields[fd.Name()] {
			if p := v.String(); len(p) > 1 && strings.HasSuffix(p, "/") {
				if q := strings.TrimRight(p, "/"); q != "" {
					m.Set(fd, protoreflect.ValueOfString(q))
				} else {
					m.Set(fd, protoreflect.ValueOfString("/"))
				}
			}
		}
		return true
	})
}
