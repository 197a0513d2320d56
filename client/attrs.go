package client

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
)

// HDFS's XAttrSetFlag bits for SetXAttr: XAttrCreate lets the attribute
// be new, XAttrReplace lets it exist already; hdfs dfs -setfattr passes
// both.
const (
	XAttrCreate  uint32 = 1
	XAttrReplace uint32 = 2
)

// SetXAttr sets extended attribute name (user.x, trusted.x: HDFS's
// namespaces) of p to value, with HDFS's flags (XAttrCreate,
// XAttrReplace or both).
func (c *Client) SetXAttr(ctx context.Context, p, name string, value []byte, flags uint32) error {
	return c.call(ctx, "SetXAttr", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.SetXAttr(ctx, &api.SetXAttrRequest{Path: p, Xattr: &api.XAttr{Name: name, Value: value}, Flags: flags}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// GetXAttrs returns the named attributes of p (every one the caller may
// see, when names is empty), in name order. A name p lacks is
// errs.NotFound.
func (c *Client) GetXAttrs(ctx context.Context, p string, names ...string) ([]*api.XAttr, error) {
	var out []*api.XAttr
	err := c.call(ctx, "GetXAttrs", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetXAttrs(ctx, &api.GetXAttrsRequest{Path: p, Names: names, Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetXattrs()
		return err
	})
	return out, err
}

// ListXAttrs returns the attributes of p the caller may see, in name
// order: with their values when the caller may read p, else names only.
func (c *Client) ListXAttrs(ctx context.Context, p string) ([]*api.XAttr, error) {
	var out []*api.XAttr
	err := c.call(ctx, "ListXAttrs", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.ListXAttrs(ctx, &api.ListXAttrsRequest{Path: p, Read: c.readOpts()}, trailerOpt(ctx))
		out = r.GetXattrs()
		return err
	})
	return out, err
}

// RemoveXAttr removes attribute name of p.
func (c *Client) RemoveXAttr(ctx context.Context, p, name string) error {
	return c.call(ctx, "RemoveXAttr", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.RemoveXAttr(ctx, &api.RemoveXAttrRequest{Path: p, Name: name}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// SetTimes sets p's modification and access times (ms since the epoch);
// -1 leaves one unchanged.
func (c *Client) SetTimes(ctx context.Context, p string, mtimeMs, atimeMs int64) error {
	return c.call(ctx, "SetTimes", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.SetTimes(ctx, &api.SetTimesRequest{Path: p, MtimeUnixMs: mtimeMs, AtimeUnixMs: atimeMs}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		return err
	})
}

// Truncate cuts the closed file p to newLength bytes. done is true when
// the file is already closed at it (the length fell on a block
// boundary); otherwise block recovery cuts the last block and closes the
// file shortly (WaitClosed waits for it).
func (c *Client) Truncate(ctx context.Context, p string, newLength int64) (done bool, err error) {
	defer c.locs.drop(p, nil) // after the call, whatever its outcome
	err = c.call(ctx, "Truncate", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.Truncate(ctx, &api.TruncateRequest{Path: p, NewLength: newLength}, trailerOpt(ctx))
		c.saw(r.GetHeader())
		done = r.GetDone()
		return err
	})
	return done, err
}

// ServerDefaults returns the namenode's defaults (HDFS's
// getServerDefaults).
func (c *Client) ServerDefaults(ctx context.Context) (*api.ServerDefaults, error) {
	var out *api.ServerDefaults
	err := c.call(ctx, "GetServerDefaults", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetServerDefaults(ctx, &api.GetServerDefaultsRequest{}, trailerOpt(ctx))
		out = r.GetDefaults()
		return err
	})
	return out, err
}

// FsStats returns the cluster's capacity and block health figures
// (HDFS's getFsStats) as the answering namenode sees them.
func (c *Client) FsStats(ctx context.Context) (*api.GetFsStatsResponse, error) {
	var out *api.GetFsStatsResponse
	err := c.call(ctx, "GetFsStats", func(ctx context.Context, nn api.ClientServiceClient) error {
		r, err := nn.GetFsStats(ctx, &api.GetFsStatsRequest{}, trailerOpt(ctx))
		out = r
		return err
	})
	return out, err
}

// EncodeXAttrValue encodes v as Hadoop's XAttrCodec does (hdfs dfs
// -getfattr -e, WebHDFS GETXATTRS encoding=): "text" in double quotes
// (the default), hex as 0x..., base64 as 0s....
func EncodeXAttrValue(v []byte, encoding string) string {
	switch strings.ToLower(encoding) {
	case "hex":
		return "0x" + hex.EncodeToString(v)
	case "base64":
		return "0s" + base64.StdEncoding.EncodeToString(v)
	}
	return `"` + string(v) + `"`
}

// DecodeXAttrValue decodes a value as Hadoop's XAttrCodec does (hdfs dfs
// -setfattr -v, WebHDFS xattr.value=): 0x... hex, 0s... base64, "..." the
// text inside the quotes, anything else its own bytes.
func DecodeXAttrValue(s string) ([]byte, error) {
	const op = "client.DecodeXAttrValue"
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return nil, errs.Newf(errs.Invalid, op, "", "%q is not hex after 0x", s)
		}
		return b, nil
	case len(s) >= 2 && (s[:2] == "0s" || s[:2] == "0S"):
		b, err := base64.StdEncoding.DecodeString(s[2:])
		if err != nil {
			return nil, errs.Newf(errs.Invalid, op, "", "%q is not base64 after 0s", s)
		}
		return b, nil
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		return []byte(s[1 : len(s)-1]), nil
	}
	return []byte(s), nil
}
