package namenode

import (
	"bytes"
	"embed"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/serve"
	"github.com/blockfs/blockfs/security"
)

// The web UI: read-only HTML pages on the HTTP port, in the spirit of
// HDFS's dfshealth page, rendered on the server with html/template (which
// escapes every value) from templates and a stylesheet embedded in the
// binary. Every page runs through the authorizer's rule for its pattern
// (security.Policy); browse pages read the namespace as the caller, through
// the same permission checks as the gRPC reads. Pages show this node's
// view: a follower says so and links to the leader.

//go:embed ui/*.html ui/*.css ui/*.svg
var uiFiles embed.FS

// uiPages are the pages, each parsed with the layout.
var uiPages = map[string]*template.Template{}

func init() {
	funcs := template.FuncMap{"bytes": humanBytes, "ago": ago, "utc": utc,
		"crumbdata": func(p uiPage, cs []crumb) any {
			return struct {
				Page   uiPage
				Crumbs []crumb
			}{p, cs}
		},
		"dntable": func(p uiPage, rows []datanodeView, id string) any {
			return struct {
				Page uiPage
				Rows []datanodeView
				ID   string
			}{p, rows, id}
		},
	}
	for _, p := range []string{"overview", "namenodes", "datanodes", "datanode", "dir", "file", "error"} {
		uiPages[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(uiFiles, "ui/layout.html", "ui/"+p+".html"))
	}
}

// uiRoutes returns the UI's endpoints, keyed by their security.Policy
// patterns.
func (n *Namenode) uiRoutes() map[string]serve.Route {
	page := func(h func(w http.ResponseWriter, r *http.Request) error) serve.Route {
		return serve.Route{Denied: n.uiDenied, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				n.uiError(w, r, uiStatus(err), err)
			}
		})}
	}
	return map[string]serve.Route{
		"GET /{$}":              page(n.uiOverview),
		"GET /namenodes":        page(n.uiNamenodes),
		"GET /datanodes":        page(n.uiDatanodes),
		"GET /datanodes/{id}":   page(n.uiDatanode),
		"GET /browse/{path...}": page(n.uiBrowse),
		"GET /static/{file}":    {Handler: http.HandlerFunc(uiStatic)},
	}
}

// uiAssets are the files served under /static/.
var uiAssets = map[string]string{"style.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}

// uiStatic serves an embedded asset.
func uiStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := uiAssets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := uiFiles.ReadFile("ui/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
}

// uiPage is what every page shows around its content: who this node is
// and what it is to Raft, the leader, and who is looking.
type uiPage struct {
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
func (p uiPage) Link(path string) string {
	u := url.URL{Path: path}
	if p.user != "" {
		u.RawQuery = url.Values{security.HTTPUserParam: {p.user}}.Encode()
	}
	return u.String()
}

// LinkQ is Link with one more query parameter.
func (p uiPage) LinkQ(path, key, value string) string {
	u := url.URL{Path: path}
	q := url.Values{key: {value}}
	if p.user != "" {
		q.Set(security.HTTPUserParam, p.user)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Browse returns the browse URL of namespace path nsPath.
func (p uiPage) Browse(nsPath string) string {
	return p.Link("/browse/" + strings.TrimPrefix(nsPath, "/"))
}

// newPage fills the frame of a page for request r.
func (n *Namenode) newPage(r *http.Request, title string, body any) uiPage {
	p := uiPage{Title: title, NodeID: n.cfg.ID, State: "shut down", Body: body}
	if id, ok := security.IdentityFromContext(r.Context()); ok {
		p.Viewer = id.String()
		if n.cfg.Auth.Mode == AuthSimple && id.Role == security.RoleUser {
			p.user = id.Name
		}
	}
	if n.raft == nil {
		return p
	}
	st := n.raft.State()
	p.State, p.IsLeader = strings.ToLower(st.String()), st == raft.Leader
	_, leader := n.raft.LeaderWithID()
	p.Leader = string(leader)
	if !p.IsLeader && p.Leader != "" {
		p.LeaderURL = n.memberURL(p.Leader, "/", p.user)
	}
	return p
}

// memberURL returns the URL of page path on namenode id's HTTP port, or ""
// when the member table has no HTTP address for it. Every namenode of a
// cluster serves HTTP alike: HTTPS under mTLS.
func (n *Namenode) memberURL(id, path, user string) string {
	m, _ := n.fsm.Member(id)
	if m == nil || m.HttpAddr == "" {
		return ""
	}
	u := url.URL{Scheme: n.httpScheme(), Host: httpHost(m.HttpAddr, m.GrpcAddr), Path: path}
	if user != "" {
		u.RawQuery = url.Values{security.HTTPUserParam: {user}}.Encode()
	}
	return u.String()
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

// httpScheme is the scheme of the namenodes' HTTP ports.
func (n *Namenode) httpScheme() string {
	if n.cfg.Auth.TLS != nil {
		return "https"
	}
	return "http"
}

// render executes page name with p into a buffer first, so that a
// template error becomes a 500 instead of half a page.
func (n *Namenode) render(w http.ResponseWriter, status int, name string, p uiPage) {
	var buf bytes.Buffer
	if err := uiPages[name].Execute(&buf, p); err != nil {
		n.log.Error("render web UI page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// uiErrorView is the content of an error page.
type uiErrorView struct {
	Status  int
	Text    string
	Message string
	// Simple is true under simple auth: the page tells how to name oneself.
	Simple bool
}

// uiError answers r with an error page.
func (n *Namenode) uiError(w http.ResponseWriter, r *http.Request, status int, err error) {
	v := uiErrorView{Status: status, Text: http.StatusText(status), Message: err.Error(), Simple: n.cfg.Auth.Mode == AuthSimple}
	n.render(w, status, "error", n.newPage(r, http.StatusText(status), v))
}

// uiDenied writes the authorizer's refusals of UI pages as error pages.
func (n *Namenode) uiDenied(w http.ResponseWriter, r *http.Request, status int, err error) {
	n.uiError(w, r, status, err)
}

// uiStatus is the HTTP status of a handler's error, by its errs kind.
func uiStatus(err error) int {
	switch errs.KindOf(err) {
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Invalid:
		return http.StatusBadRequest
	case errs.Permission:
		return http.StatusForbidden
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	case errs.Unavailable, errs.NotLeader, errs.Timeout:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
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
