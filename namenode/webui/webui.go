// Package webui is the namenode's web UI: read-only HTML pages on the HTTP
// port, in the spirit of HDFS's dfshealth page, rendered on the server with
// html/template (which escapes every value) from templates and a stylesheet
// embedded in the binary.
//
// It is a door: it translates HTTP into calls on two things it is given and
// holds no rule of its own. The cluster pages (overview, namenodes,
// datanodes) show a StatusSource, this node's own view: a follower says so
// and links to the leader. The browse pages read the namespace through the
// client service (api.ClientServiceServer), the entrance every other read
// takes, so its validation, read barrier and permission checks apply, as
// the caller the HTTP authorizer named. Every page runs through the
// authorizer's rule for its pattern (security.Policy); Routes keys the
// handlers by those patterns.
package webui

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
	"net/http"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/internal/node/serve"
)

//go:embed ui/*.html ui/*.css ui/*.svg
var files embed.FS

// pageNames are the pages, each a template parsed with the layout.
var pageNames = []string{"overview", "namenodes", "datanodes", "datanode", "dir", "file", "error"}

// Config is what the UI shows of the node's configuration.
type Config struct {
	// Cluster names the cluster (its trust domain).
	Cluster string
	// TokenMode is the block-token mode's name.
	TokenMode string
	// Auth is the authentication mode's name.
	Auth string
	// SimpleAuth is true under simple authentication: links carry the
	// viewer's user.name, and the 401 page tells how to give one.
	SimpleAuth bool
	// TLS is true when the cluster's HTTP ports serve HTTPS.
	TLS bool
	// Log receives template failures; nil logs to slog.Default().
	Log *slog.Logger
}

// UI serves the pages.
type UI struct {
	cfg    Config
	status StatusSource
	client api.ClientServiceServer
	pages  map[string]*template.Template
	log    *slog.Logger
}

// New returns the UI of the node that status describes, browsing through
// client. It fails only if an embedded template does not parse.
func New(cfg Config, status StatusSource, client api.ClientServiceServer) (*UI, error) {
	if status == nil || client == nil {
		return nil, errs.New(errs.Invalid, "webui.New", "", "a status source and a client service are needed")
	}
	u := &UI{cfg: cfg, status: status, client: client, pages: map[string]*template.Template{}, log: cfg.Log}
	if u.log == nil {
		u.log = slog.Default()
	}
	funcs := template.FuncMap{"bytes": humanBytes, "ago": ago, "utc": utc,
		"crumbdata": func(p page, cs []crumb) any {
			return struct {
				Page   page
				Crumbs []crumb
			}{p, cs}
		},
		"dntable": func(p page, rows []datanodeView, id string) any {
			return struct {
				Page page
				Rows []datanodeView
				ID   string
			}{p, rows, id}
		},
	}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "ui/layout.html", "ui/"+name+".html")
		if err != nil {
			return nil, err
		}
		u.pages[name] = t
	}
	return u, nil
}

// Routes returns the UI's endpoints, keyed by their security.Policy
// patterns.
func (u *UI) Routes() map[string]serve.Route {
	pg := func(h func(w http.ResponseWriter, r *http.Request) error) serve.Route {
		return serve.Route{Denied: u.denied, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				u.error(w, r, httpStatus(err), err)
			}
		})}
	}
	return map[string]serve.Route{
		"GET /{$}":              pg(u.overview),
		"GET /namenodes":        pg(u.namenodes),
		"GET /datanodes":        pg(u.datanodes),
		"GET /datanodes/{id}":   pg(u.datanode),
		"GET /browse/{path...}": pg(u.browse),
		"GET /static/{file}":    {Handler: http.HandlerFunc(static)},
	}
}

// assetType is the Content-Type of the asset served as /static/name, ""
// for a name that is not one.
func assetType(name string) string {
	switch name {
	case "style.css":
		return "text/css; charset=utf-8"
	case "favicon.svg":
		return "image/svg+xml"
	}
	return ""
}

// static serves an embedded asset.
func static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype := assetType(name)
	if ctype == "" {
		http.NotFound(w, r)
		return
	}
	b, err := files.ReadFile("ui/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "max-age=3600")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(b)
}

// render executes page name with p into a buffer first, so that a
// template error becomes a 500 instead of half a page.
func (u *UI) render(w http.ResponseWriter, status int, name string, p page) {
	var buf bytes.Buffer
	if err := u.pages[name].Execute(&buf, p); err != nil {
		u.log.Error("render web UI page", "page", name, "err", err)
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

// errorView is the content of an error page.
type errorView struct {
	Status  int
	Text    string
	Message string
	// Simple is true under simple auth: the page tells how to name oneself.
	Simple bool
}

// error answers r with an error page.
func (u *UI) error(w http.ResponseWriter, r *http.Request, status int, err error) {
	v := errorView{Status: status, Text: http.StatusText(status), Message: err.Error(), Simple: u.cfg.SimpleAuth}
	u.render(w, status, "error", u.newPage(r, http.StatusText(status), v))
}

// denied writes the authorizer's refusals of UI pages as error pages.
func (u *UI) denied(w http.ResponseWriter, r *http.Request, status int, err error) {
	u.error(w, r, status, err)
}

// httpStatus is the HTTP status of a handler's error, by its errs kind.
func httpStatus(err error) int {
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
