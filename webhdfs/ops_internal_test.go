package webhdfs

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/blockfs/blockfs/internal/node/serve"
)

// TestOpTableDispatch: the op table is the one list both doors dispatch
// from: a served op has a namenode handler, a Redirect op also a
// datanode one, an op not served neither, and the doors' routes are the
// methods of those rows.
func TestOpTableDispatch(t *testing.T) {
	for _, o := range Ops() {
		served, redirect := o.Supported(), o.Redirect
		if (o.namenode != nil) != served {
			t.Errorf("%s: namenode handler %v, served %v", o.Name, o.namenode != nil, served)
		}
		if (o.datanode != nil) != (served && redirect) {
			t.Errorf("%s: datanode handler %v, served redirect %v", o.Name, o.datanode != nil, served && redirect)
		}
	}
	cases := []struct {
		name   string
		routes map[string]serve.Route
		want   []string
	}{
		{"namenode", (&NamenodeDoor{}).Routes(), []string{http.MethodDelete, http.MethodGet, http.MethodPost, http.MethodPut}},
		{"datanode", (&DatanodeDoor{}).Routes(), []string{http.MethodGet, http.MethodPost, http.MethodPut}},
	}
	for _, c := range cases {
		var want []string
		for _, m := range c.want {
			want = append(want, m+" "+Prefix+"/")
		}
		if got := slices.Sorted(maps.Keys(c.routes)); !slices.Equal(got, want) {
			t.Errorf("%s routes %v, want %v", c.name, got, want)
		}
	}
}
