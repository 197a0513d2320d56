package datanode

import (
	"context"
	"errors"

	"github.com/blockfs/blockfs/client"
	"github.com/blockfs/blockfs/internal/node/serve"
	"github.com/blockfs/blockfs/security"
	"github.com/blockfs/blockfs/webhdfs"
)

// The WebHDFS door's data steps (package webhdfs) on this datanode's HTTP
// port: the door checks redirect tokens with the keys this datanode
// learned from the namenodes and acts as the token's user through the Go
// client library.

// webhdfsRoutes builds the datanode's WebHDFS door, returns its routes,
// and starts the goroutine that closes the door's client when the
// datanode stops.
func (d *Datanode) webhdfsRoutes() map[string]serve.Route {
	cc := client.DefaultConfig(d.cfg.Namenodes...)
	cc.DialOptions = d.cfg.DialOptions
	cc.ChunkSize = d.cfg.ChunkSize
	door := webhdfs.NewDatanodeDoor(webhdfs.DatanodeConfig{
		ID:         d.id,
		Verifier:   redirectVerifier{t: d.tokens, v: security.NewRedirectVerifier(d.cfg.Security, d.tokens.keys)},
		Client:     cc,
		SimpleAuth: d.cfg.Auth == AuthSimple,
		ClockSkew:  d.cfg.Security.ClockSkew,
		Log:        d.log,
	})
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		<-d.ctx.Done()
		door.Close()
	}()
	return door.Routes()
}

// redirectVerifier verifies redirect tokens (webhdfs.RedirectVerifier);
// one signed by a key this datanode has not heard of waits for a key
// refresh, as block tokens do.
type redirectVerifier struct {
	t *tokens
	v *security.RedirectVerifier
}

func (rv redirectVerifier) VerifyRedirect(ctx context.Context, token []byte) (security.Redirect, error) {
	var red security.Redirect
	var err error
	rv.t.awaitKeys(ctx, func() bool {
		red, err = rv.v.Verify(token)
		return errors.Is(err, security.ErrUnknownRedirectKey)
	})
	return red, err
}
