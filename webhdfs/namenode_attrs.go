package webhdfs

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/namespace"
)

// Extended attributes, times and truncate, with WebHDFS's parameters and
// JSON (Hadoop's XAttrNameParam, XAttrValueParam, XAttrSetFlagParam,
// XAttrEncodingParam, ModificationTimeParam, AccessTimeParam,
// NewLengthParam).

// XAttrJSON is one attribute of a GETXATTRS answer; Value is encoded as
// the request's encoding says (null for an attribute without a value).
type XAttrJSON struct {
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// XAttrsJSON is the GETXATTRS answer.
type XAttrsJSON struct {
	XAttrs []XAttrJSON `json:"XAttrs"`
}

// XAttrNamesJSON is the LISTXATTRS answer: Hadoop puts the names in a
// JSON array encoded as a string.
type XAttrNamesJSON struct {
	XAttrNames string `json:"XAttrNames"`
}

// xattrEncoding reads the encoding parameter: text (the default), hex or
// base64.
func xattrEncoding(q Query) (string, error) {
	e := q.String("encoding")
	switch strings.ToUpper(e) {
	case "", "TEXT", "HEX", "BASE64":
		return e, nil
	}
	return "", badParam("encoding", e, "want text, hex or base64")
}

// xattrFlags reads the flag parameter: CREATE, REPLACE or both
// (comma-separated); absent means both, as hdfs dfs -setfattr sets.
func xattrFlags(q Query) (uint32, error) {
	v := q.String("flag")
	if v == "" {
		return 3, nil
	}
	var flags uint32
	for _, f := range strings.Split(v, ",") {
		switch strings.ToUpper(strings.TrimSpace(f)) {
		case "CREATE":
			flags |= 1
		case "REPLACE":
			flags |= 2
		default:
			return 0, badParam("flag", v, "want CREATE, REPLACE or CREATE,REPLACE")
		}
	}
	return flags, nil
}

// xattrError answers a missing attribute, or one that exists under
// CREATE, as HDFS does: a plain IOException with the namespace's words.
func xattrError(err error) error {
	if k := errs.KindOf(err); k != errs.NotFound && k != errs.Exist {
		return err
	}
	msg := err.Error()
	for _, m := range []string{namespace.MsgXAttrNotFound, namespace.MsgXAttrRemoveNotFound, "XAttr: "} {
		if i := strings.Index(msg, m); i >= 0 {
			return &Error{Ex: IOError, Msg: msg[i:]}
		}
	}
	return err
}

func (d *NamenodeDoor) getXAttrs(ctx context.Context, req *request) (answer, error) {
	enc, err := xattrEncoding(req.q)
	if err != nil {
		return answer{}, err
	}
	r, err := d.svc.GetXAttrs(ctx, &api.GetXAttrsRequest{Path: req.path, Names: req.q.v["xattr.name"]})
	if err != nil {
		return answer{}, xattrError(err)
	}
	out := XAttrsJSON{XAttrs: []XAttrJSON{}}
	for _, x := range r.Xattrs {
		v := client.EncodeXAttrValue(x.Value, enc)
		out.XAttrs = append(out.XAttrs, XAttrJSON{Name: x.Name, Value: &v})
	}
	return jsonAnswer(out)
}

func (d *NamenodeDoor) listXAttrs(ctx context.Context, req *request) (answer, error) {
	r, err := d.svc.ListXAttrs(ctx, &api.ListXAttrsRequest{Path: req.path})
	if err != nil {
		return answer{}, err
	}
	names := make([]string, len(r.Xattrs))
	for i, x := range r.Xattrs {
		names[i] = x.Name
	}
	b, err := json.Marshal(names)
	if err != nil {
		return answer{}, errs.Wrap(errs.Internal, "webhdfs.NamenodeDoor", req.path, err)
	}
	return jsonAnswer(XAttrNamesJSON{XAttrNames: string(b)})
}

func (d *NamenodeDoor) setXAttr(ctx context.Context, req *request) (answer, error) {
	name := req.q.String("xattr.name")
	if name == "" {
		return answer{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "xattr.name": missing`)
	}
	value, err := client.DecodeXAttrValue(req.q.String("xattr.value"))
	if err != nil {
		return answer{}, &Error{Ex: IllegalArgument, Msg: `Invalid value for webhdfs parameter "xattr.value"`, Err: err}
	}
	flags, err := xattrFlags(req.q)
	if err != nil {
		return answer{}, err
	}
	if _, err := d.svc.SetXAttr(ctx, &api.SetXAttrRequest{Path: req.path, Xattr: &api.XAttr{Name: name, Value: value}, Flags: flags}); err != nil {
		return answer{}, xattrError(err)
	}
	return answer{status: http.StatusOK}, nil
}

func (d *NamenodeDoor) removeXAttr(ctx context.Context, req *request) (answer, error) {
	name := req.q.String("xattr.name")
	if name == "" {
		return answer{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "xattr.name": missing`)
	}
	if _, err := d.svc.RemoveXAttr(ctx, &api.RemoveXAttrRequest{Path: req.path, Name: name}); err != nil {
		return answer{}, xattrError(err)
	}
	return answer{status: http.StatusOK}, nil
}

// setTimes: modificationtime and accesstime in ms, -1 (the default)
// leaving one unchanged.
func (d *NamenodeDoor) setTimes(ctx context.Context, req *request) (answer, error) {
	m, err := req.q.Int("modificationtime", -1, -1, math.MaxInt64)
	if err != nil {
		return answer{}, err
	}
	a, err := req.q.Int("accesstime", -1, -1, math.MaxInt64)
	if err != nil {
		return answer{}, err
	}
	if _, err := d.svc.SetTimes(ctx, &api.SetTimesRequest{Path: req.path, MtimeUnixMs: m, AtimeUnixMs: a}); err != nil {
		return answer{}, err
	}
	return answer{status: http.StatusOK}, nil
}

// truncate answers {"boolean": done}: true when the file is closed at
// the new length already, false while block recovery cuts its last block.
func (d *NamenodeDoor) truncate(ctx context.Context, req *request) (answer, error) {
	if !req.q.Has("newlength") {
		return answer{}, Errorf(IllegalArgument, `Invalid value for webhdfs parameter "newlength": missing`)
	}
	n, err := req.q.Int("newlength", 0, math.MinInt64, math.MaxInt64)
	if err != nil {
		return answer{}, err
	}
	r, err := d.svc.Truncate(ctx, &api.TruncateRequest{Path: req.path, NewLength: n, ClientName: "webhdfs"})
	if err != nil {
		return answer{}, err
	}
	return boolAnswer(r.Done)
}
