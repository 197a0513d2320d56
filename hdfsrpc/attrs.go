package hdfsrpc

import (
	"context"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/blockfs/blockfs/api"
	hdfs "github.com/blockfs/blockfs/api/hadoop/hdfs"
	"github.com/blockfs/blockfs/errs"
)

// HDFS's XAttrProto names the namespace apart from the name; blockfs's
// attribute names carry it as their prefix ("user.name").
var xattrPrefixes = map[hdfs.XAttrProto_XAttrNamespaceProto]string{
	hdfs.XAttrProto_USER: "user.", hdfs.XAttrProto_TRUSTED: "trusted.", hdfs.XAttrProto_SECURITY: "security.",
	hdfs.XAttrProto_SYSTEM: "system.", hdfs.XAttrProto_RAW: "raw.",
}

func xattrName(x *hdfs.XAttrProto) string {
	return xattrPrefixes[x.GetNamespace()] + x.GetName()
}

// xattrProto splits a blockfs attribute name back into HDFS's namespace
// and name.
func xattrProto(x *api.XAttr, withValue bool) *hdfs.XAttrProto {
	for ns, p := range xattrPrefixes {
		if strings.HasPrefix(x.Name, p) {
			out := &hdfs.XAttrProto{Namespace: ns.Enum(), Name: proto.String(x.Name[len(p):])}
			if withValue {
				out.Value = x.Value
			}
			return out
		}
	}
	return &hdfs.XAttrProto{Namespace: hdfs.XAttrProto_USER.Enum(), Name: proto.String(x.Name)}
}

func setXAttr(d *Door, ctx context.Context, req *hdfs.SetXAttrRequestProto) (proto.Message, error) {
	if req.XAttr == nil {
		return nil, errs.New(errs.Invalid, "setXAttr", req.GetSrc(), "no attribute")
	}
	_, err := d.cfg.Service.SetXAttr(ctx, &api.SetXAttrRequest{
		Path: req.GetSrc(), Xattr: &api.XAttr{Name: xattrName(req.XAttr), Value: req.XAttr.Value}, Flags: req.GetFlag(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.SetXAttrResponseProto{}, nil
}

func getXAttrs(d *Door, ctx context.Context, req *hdfs.GetXAttrsRequestProto) (proto.Message, error) {
	var names []string
	for _, x := range req.GetXAttrs() {
		names = append(names, xattrName(x))
	}
	r, err := d.cfg.Service.GetXAttrs(ctx, &api.GetXAttrsRequest{Path: req.GetSrc(), Names: names})
	if err != nil {
		return nil, err
	}
	out := &hdfs.GetXAttrsResponseProto{XAttrs: make([]*hdfs.XAttrProto, len(r.Xattrs))}
	for i, x := range r.Xattrs {
		out.XAttrs[i] = xattrProto(x, true)
	}
	return out, nil
}

func listXAttrs(d *Door, ctx context.Context, req *hdfs.ListXAttrsRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.ListXAttrs(ctx, &api.ListXAttrsRequest{Path: req.GetSrc()})
	if err != nil {
		return nil, err
	}
	out := &hdfs.ListXAttrsResponseProto{XAttrs: make([]*hdfs.XAttrProto, len(r.Xattrs))}
	for i, x := range r.Xattrs {
		out.XAttrs[i] = xattrProto(x, true) // HDFS's namenode sends the values too
	}
	return out, nil
}

func removeXAttr(d *Door, ctx context.Context, req *hdfs.RemoveXAttrRequestProto) (proto.Message, error) {
	if req.XAttr == nil {
		return nil, errs.New(errs.Invalid, "removeXAttr", req.GetSrc(), "no attribute")
	}
	if _, err := d.cfg.Service.RemoveXAttr(ctx, &api.RemoveXAttrRequest{Path: req.GetSrc(), Name: xattrName(req.XAttr)}); err != nil {
		return nil, err
	}
	return &hdfs.RemoveXAttrResponseProto{}, nil
}

// setTimes: HDFS sends -1 (as an unsigned 2^64-1) to leave a time as is.
func setTimes(d *Door, ctx context.Context, req *hdfs.SetTimesRequestProto) (proto.Message, error) {
	_, err := d.cfg.Service.SetTimes(ctx, &api.SetTimesRequest{
		Path: req.GetSrc(), MtimeUnixMs: int64(req.GetMtime()), AtimeUnixMs: int64(req.GetAtime()),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.SetTimesResponseProto{}, nil
}

func truncate(d *Door, ctx context.Context, req *hdfs.TruncateRequestProto) (proto.Message, error) {
	r, err := d.cfg.Service.Truncate(ctx, &api.TruncateRequest{
		Path: req.GetSrc(), NewLength: int64(req.GetNewLength()), ClientName: req.GetClientName(),
	})
	if err != nil {
		return nil, err
	}
	return &hdfs.TruncateResponseProto{Result: proto.Bool(r.Done)}, nil
}
