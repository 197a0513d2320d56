package webui

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/blockfs/blockfs/security"
)

// page is what every page shows around its content: who this node is
// and what it is to Raft, the leader, and who is looking.
type page struct {
	Title    string
	NodeID   string
	State    string
	IsLeader bool
	Leader   string
	// LeaderURL is the leader's UI, "" when unknown or this node.
	LeaderURL string
	Viewer    string
	// user is the user.name to carry in links under simple auth.
	user string
	Body any
}

// Link returns the URL of this node's UI page p (a path, escaped here),
// carrying user.name under simple auth so that the next page knows the
// viewer too.
func (p page) Link(path string) string {
	u := url.URL{Path: path}
	if p.user != "" {
		u.RawQuery = url.Values{security.HTTPUserParam: {p.user}}.Encode()
	}
	return u.String()
}

// LinkQ is Link with one more query parameter.
func (p page) LinkQ(path, key, value string) string {
	u := url.URL{Path: path}
	q := url.Values{key: {value}}
	if p.user != "" {
		q.Set(security.HTTPUserParam, p.user)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Browse returns the browse URL of namespace path nsPath.
func (p page) Browse(nsPath string) string {
	return p.Link("/browse/" + strings.TrimPrefix(nsPath, "/"))
}

// newPage fills the frame of a page for request r.
func (u *UI) newPage(r *http.Request, title string, body any) page {
	nd := u.status.Node()
	p := page{Title: title, NodeID: nd.ID, State: nd.State, Body: body}
	if id, ok := security.IdentityFromContext(r.Context()); ok {
		p.Viewer = id.String()
		// A browser that named no user is the static web user: its
		// links stay anonymous too, so that naming oneself later works.
		if u.cfg.SimpleAuth && id.Role == security.RoleUser && r.URL.Query().Has(security.HTTPUserParam) {
			p.user = id.Name
		}
	}
	p.IsLeader, p.Leader = nd.State == "leader", nd.Leader
	if !p.IsLeader && p.Leader != "" {
		if ms, err := u.status.Members(); err == nil {
			for _, m := range ms {
				if m.ID == p.Leader {
					p.LeaderURL = u.memberURL(m, "/", p.user)
				}
			}
		}
	}
	return p
}

// memberURL returns the URL of page path on namenode m's HTTP port, or ""
// when the member table has no HTTP address for it. Every namenode of a
// cluster serves HTTP alike: HTTPS under TLS.
func (u *UI) memberURL(m Member, path, user string) string {
	if m.HTTPAddr == "" {
		return ""
	}
	l := url.URL{Scheme: u.scheme(), Host: httpHost(m.HTTPAddr, m.GRPCAddr), Path: path}
	if user != "" {
		l.RawQuery = url.Values{security.HTTPUserParam: {user}}.Encode()
	}
	return l.String()
}

// httpHost is where a node's HTTP port is reached: its recorded HTTP
// address, with the host of its advertised gRPC address when that one is
// unspecified (a node bound to 0.0.0.0, as in Kubernetes, where the gRPC
// address it advertises is its stable DNS name).
func httpHost(httpAddr, grpcAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return httpAddr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if g, _, err := net.SplitHostPort(grpcAddr); err == nil && g != "" {
			return net.JoinHostPort(g, port)
		}
	}
	return httpAddr
}

// scheme is the scheme of the cluster's HTTP ports.
func (u *UI) scheme() string {
	if u.cfg.TLS {
		return "https"
	}
	return "http"
}

// humanBytes renders a byte count in binary units ("1.5 GiB").
func humanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatUint(b, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for x := b / unit; x >= unit && exp < 5; x /= unit {
		div *= unit
		exp++
	}
	whole, frac := b/div, (b%div)*10/div
	return strconv.FormatUint(whole, 10) + "." + strconv.FormatUint(frac, 10) + " " + string("KMGTPE"[exp]) + "iB"
}

// ago renders how long before now t was ("3s ago"); "never" for zero.
func ago(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "never"
	}
	d := time.Since(t)
	if d < 0 {
		d = 0
	}
	return d.Truncate(time.Second).String() + " ago"
}

// utc renders t as an RFC 3339 UTC time to the second; "-" for zero.
func utc(t time.Time) string {
	if t.IsZero() || t.Unix() <= 0 {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
