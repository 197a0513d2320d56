package webhdfs_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/webhdfs"
)

// TestParams: parameter parsing accepts Hadoop's forms and refuses the
// rest with IllegalArgumentException.
func TestParams(t *testing.T) {
	q, err := webhdfs.ParseQuery("Overwrite=TRUE&permission=1755&offset=12&len=x&blocksize=&Op=open")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := q.Bool("overwrite", false); err != nil || !b {
		t.Errorf("overwrite: %v %v", b, err)
	}
	if p, err := q.Permission("permission", 0); err != nil || p != 0o1755 {
		t.Errorf("permission: %o %v", p, err)
	}
	if n, err := q.Uint("blocksize", 7); err != nil || n != 7 {
		t.Errorf("empty blocksize takes the default: %d %v", n, err)
	}
	if q.String("op") != "open" {
		t.Errorf("names are case-insensitive")
	}
	for _, raw := range []string{"x=true&x=%zz", "overwrite=yes", "permission=8", "permission=17777", "offset=-1", "offset=1e3", "offset=99999999999999999999"} {
		q, err := webhdfs.ParseQuery(raw)
		if err == nil {
			_, err1 := q.Bool("overwrite", false)
			_, err2 := q.Permission("permission", 0)
			_, err3 := q.Uint("offset", 0)
			err = errors.Join(err1, err2, err3)
		}
		if webhdfs.ExceptionFor(err) != webhdfs.IllegalArgument {
			t.Errorf("%s: %v, want IllegalArgumentException", raw, err)
		}
	}
}

// TestPaths: the namespace's path rules, with trailing slashes dropped.
func TestPaths(t *testing.T) {
	for in, want := range map[string]string{"/webhdfs/v1": "/", "/webhdfs/v1/": "/", "/webhdfs/v1/a/b/": "/a/b"} {
		if got, err := webhdfs.Path(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/webhdfs/v1x", "/other/a", "/webhdfs/v1/a\x00b", "/webhdfs/v1/a/./b"} {
		if _, err := webhdfs.Path(in); webhdfs.ExceptionFor(err) != webhdfs.InvalidPath {
			t.Errorf("%q: %v, want InvalidPathException", in, err)
		}
	}
}

// TestLookupOp: served, unsupported and unknown ops, and methods.
func TestLookupOp(t *testing.T) {
	cases := []struct {
		method, op string
		ex         webhdfs.Exception // zero: served
	}{
		{"GET", "getfilestatus", webhdfs.Exception{}},
		{"PUT", "CREATE", webhdfs.Exception{}},
		{"POST", "append", webhdfs.Exception{}},
		{"PUT", "APPEND", webhdfs.IllegalArgument},
		{"POST", "TRUNCATE", webhdfs.Exception{}},
		{"PUT", "SETXATTR", webhdfs.Exception{}},
		{"GET", "SETTIMES", webhdfs.IllegalArgument},
		{"GET", "GETACLSTATUS", webhdfs.Unsupported},
		{"GET", "CREATE", webhdfs.IllegalArgument},
		{"GET", "NOPE", webhdfs.IllegalArgument},
		{"GET", "", webhdfs.IllegalArgument},
	}
	for _, c := range cases {
		_, err := webhdfs.LookupOp(c.method, c.op)
		if (c.ex == webhdfs.Exception{}) != (err == nil) || (err != nil && webhdfs.ExceptionFor(err) != c.ex) {
			t.Errorf("%s %s: %v, want %v", c.method, c.op, err, c.ex.Name)
		}
	}
	// A refused Append of a file being written is HDFS's
	// AlreadyBeingCreatedException, a Create over a directory
	// FileAlreadyExistsException; their other refusals keep their kind.
	for _, c := range []struct {
		err error
		ex  webhdfs.Exception
	}{
		{errs.New(errs.Precondition, "Append", "/f", "open"), webhdfs.AlreadyBeingCreated},
		{errs.New(errs.Permission, "Append", "/f", "no w"), webhdfs.AccessControl},
		{errs.New(errs.IsDir, "Create", "/d", "is a directory"), webhdfs.FileAlreadyExists},
		{errs.New(errs.IsDir, "OPEN", "/d", "is a directory"), webhdfs.FileNotFound},
		{errs.New(errs.NotFound, "Create", "/d/f", "no parent"), webhdfs.FileNotFound},
	} {
		if ex := webhdfs.ExceptionFor(c.err); ex != c.ex {
			t.Errorf("%v: %v, want %v", c.err, ex, c.ex)
		}
	}
	for _, o := range webhdfs.Ops() {
		if o.Name == "" || o.Method == "" {
			t.Errorf("op %+v", o)
		}
	}
}

// TestExceptionStatus: every errs kind has Hadoop's exception and status,
// and the body is Hadoop's RemoteException.
func TestExceptionStatus(t *testing.T) {
	cases := []struct {
		kind   errs.Kind
		why    string
		name   string
		status int
		msg    string
	}{
		{errs.NotFound, "why", "FileNotFoundException", 404, "File does not exist: /p"},
		{errs.Permission, "user=u access=-w- inode=\"/p\":o:g:-rw-r--r-- (why)", "AccessControlException", 403,
			`Permission denied: user=u, access=WRITE, inode="/p":o:g:-rw-r--r-- (why)`},
		{errs.Exist, "why", "FileAlreadyExistsException", 403, "/p already exists"},
		{errs.NotEmpty, "why", "PathIsNotEmptyDirectoryException", 403, "`/p is non empty': Directory is not empty"},
		{errs.Invalid, "why", "IllegalArgumentException", 400, "why"},
		{errs.Unauthenticated, "why", "SecurityException", 401, "why"},
		{errs.Unavailable, "why", "RetriableException", 503, "why"},
		{errs.NotLeader, "why", "StandbyException", 503, "Operation category WRITE is not supported in state standby"},
		{errs.Precondition, "why", "IOException", 403, "why"},
		{errs.Internal, "why", "RuntimeException", 500, "why"},
		{errs.Precondition, "SafeModeException: Cannot Create. Name node is in safe mode.", "RetriableException", 403,
			"org.apache.hadoop.hdfs.server.namenode.SafeModeException: Cannot Create. Name node is in safe mode."},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		webhdfs.WriteError(w, errs.New(c.kind, "op", "/p", c.why))
		var body map[string]map[string]string
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		re := body["RemoteException"]
		if w.Code != c.status || re["exception"] != c.name || re["javaClassName"] == "" || re["message"] != c.msg {
			t.Errorf("%v: %d %v, want %d %s %q", c.kind, w.Code, re, c.status, c.name, c.msg)
		}
	}
}

// TestBlockEncodersRefuseMalformedReplies: the hand-written encoders check
// every index and length of the packed reply instead of panicking, and
// escape what they copy into JSON.
func TestBlockEncodersRefuseMalformedReplies(t *testing.T) {
	good := func() *api.GetBlockLocationsResponse {
		return &api.GetBlockLocationsResponse{
			FileLength: 10, BlockIds: []uint64{1, 2}, GenStamps: []uint64{1, 1}, Lengths: []uint64{5, 5},
			ReplicaCounts: []uint32{1, 1}, ReplicaIndexes: []uint32{0, 0},
			Datanodes: []*api.DatanodeInfo{{Id: "dn\"1", Addr: "127.0.0.1:1"}},
		}
	}
	for name, bad := range map[string]func(r *api.GetBlockLocationsResponse){
		"short gen stamps":   func(r *api.GetBlockLocationsResponse) { r.GenStamps = r.GenStamps[:1] },
		"counts overrun":     func(r *api.GetBlockLocationsResponse) { r.ReplicaCounts[1] = 5 },
		"index out of range": func(r *api.GetBlockLocationsResponse) { r.ReplicaIndexes[1] = 3 },
		"offsets wrap":       func(r *api.GetBlockLocationsResponse) { r.Lengths[0] = ^uint64(0) },
	} {
		r := good()
		bad(r)
		if _, err := webhdfs.BlockLocations(r); err == nil {
			t.Errorf("BlockLocations %s: no error", name)
		}
		if _, err := webhdfs.LocatedBlocks(r, "bp"); err == nil {
			t.Errorf("LocatedBlocks %s: no error", name)
		}
	}
	for _, enc := range []func(*api.GetBlockLocationsResponse) ([]byte, error){
		webhdfs.BlockLocations,
		func(r *api.GetBlockLocationsResponse) ([]byte, error) { return webhdfs.LocatedBlocks(r, "b\\p") },
	} {
		b, err := enc(good())
		if err != nil || !json.Valid(b) {
			t.Errorf("%v: invalid JSON %s", err, b)
		}
	}
}
