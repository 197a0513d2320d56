package webui_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/blockfs/blockfs/security"
)

// chromiumPath finds a Chromium to drive: $BLOCKFS_CHROMIUM, else the
// first of Debian's and other distributions' names on PATH.
func chromiumPath() string {
	if p := os.Getenv("BLOCKFS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// consoleErrors collects what a page reports as an error: console.error
// calls, uncaught exceptions, and the browser's own error log entries
// (failed loads, CSP violations).
type consoleErrors struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleErrors) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			msg = fmt.Sprintf("console.error %v", ev.Args)
		}
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			msg = fmt.Sprintf("%s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if msg != "" {
		c.mu.Lock()
		c.errs = append(c.errs, msg)
		c.mu.Unlock()
	}
}

// take returns the errors collected since the last call.
func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.errs
	c.errs = nil
	return out
}

// TestWebUIBrowser drives the web UI in a headless Chromium: every page
// loads with no console error, the datanode table lists exactly the
// cluster's datanodes and shows a stopped one dead, browse goes from the
// root into a directory and a file's block list and on to a replica's
// datanode, and a follower links to the leader. Screenshots of each page
// are written as PNG files to the test's artifact directory (go test
// -artifacts -outputdir DIR keeps them; docs/ui-overview.png is one).
func TestWebUIBrowser(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("SKIPPING THE BROWSER TEST: no chromium binary found (apt-get install chromium, or set BLOCKFS_CHROMIUM); the web UI is NOT tested in a browser")
	}
	c := uiCluster(t, 3, 3, false)
	leader := c.Leader()
	base := "http://" + c.Namenode(leader).HTTPAddr()
	as := "?" + url.Values{security.HTTPUserParam: {"alice"}}.Encode()
	shots := t.ArtifactDir()

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 860))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer func() {
		chromedp.Cancel(bctx)
		cancelBrowser()
	}()
	if err := chromedp.Do(bctx); err != nil { // start the browser, open the tab
		t.Fatalf("start %s: %v", bin, err)
	}
	var console consoleErrors
	if err := chromedp.Listen(bctx, console.listen); err != nil {
		t.Fatal(err)
	}
	// Each step gets its own bound; the browser's context has none.
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if errs := console.take(); len(errs) > 0 {
			t.Fatalf("%s: console errors:\n%s", what, strings.Join(errs, "\n"))
		}
	}
	shoot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	datanodeIDs := func(table string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 15*time.Second)
		defer cancel()
		ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("#`+table+` tr.datanode")).map(r => r.dataset.id)`))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}

	step("overview", chromedp.Navigate(base+"/"+as), chromedp.WaitVisible(chromedp.ID("raft")))
	shoot("overview.png")
	step("namenodes", chromedp.Click(chromedp.CSS(`nav a[href^="/namenodes"]`)), chromedp.WaitVisible(chromedp.ID("namenodes")))
	shoot("namenodes.png")

	step("datanodes", chromedp.Click(chromedp.CSS(`nav a[href^="/datanodes"]`)), chromedp.WaitVisible(chromedp.ID("live-datanodes")))
	var all []string
	for i := range 3 {
		all = append(all, c.DatanodeID(i))
	}
	slices.Sort(all)
	if live := datanodeIDs("live-datanodes"); !slices.Equal(live, all) {
		t.Fatalf("live datanodes %v, want exactly %v", live, all)
	}
	shoot("datanodes.png")

	victim := c.DatanodeID(2)
	if err := c.StopDatanode(2); err != nil {
		t.Fatal(err)
	}
	for {
		step("datanodes after a stop", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("dead-datanodes")))
		if dead := datanodeIDs("dead-datanodes"); slices.Equal(dead, []string{victim}) {
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the stopped datanode never turned dead")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if live := datanodeIDs("live-datanodes"); slices.Contains(live, victim) || len(live) != 2 {
		t.Fatalf("live datanodes %v after %s stopped", live, victim)
	}
	shoot("datanodes-dead.png")

	step("browse root", chromedp.Click(chromedp.CSS(`nav a[href^="/browse/"]`)), chromedp.WaitVisible(chromedp.ID("listing")))
	step("into /data", chromedp.Click(chromedp.CSS(`a.entry[href^="/browse/data?"]`)), chromedp.WaitVisible(chromedp.CSS(`a.entry[href^="/browse/data/f?"]`)))
	shoot("browse-dir.png")
	step("into /data/f", chromedp.Click(chromedp.CSS(`a.entry[href^="/browse/data/f?"]`)), chromedp.WaitVisible(chromedp.ID("blocks")))
	ctx, cancel := context.WithTimeout(bctx, 15*time.Second)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#blocks tr.block").length`))
	cancel()
	if err != nil || rows != 2 {
		t.Fatalf("block rows = %d (%v), want 2", rows, err)
	}
	shoot("browse-file.png")
	step("a replica's datanode", chromedp.Click(chromedp.CSS(`a.replica.live`)), chromedp.WaitVisible(chromedp.ID("datanode")))
	shoot("datanode.png")

	follower := "http://" + c.Namenode((leader+1)%3).HTTPAddr()
	step("follower", chromedp.Navigate(follower+"/"+as), chromedp.WaitVisible(chromedp.ID("leader-link")))
	shoot("follower.png")
	step("follower to leader", chromedp.Click(chromedp.ID("leader-link")), chromedp.WaitVisible(chromedp.ID("raft")), chromedp.WaitNotPresent(chromedp.ID("follower-banner")))
	t.Logf("screenshots in %s", shots)
}
