package fsm

import (
	"testing"
	"time"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/errs"
	"github.com/blockfs/blockfs/security"
)

// TestRegisterKeyOnlyFromItsOwner: the FSM publishes a signing key only
// when the command's proposer is the namenode the kid names.
func TestRegisterKeyOnlyFromItsOwner(t *testing.T) {
	kp, err := security.GenerateKeyPair("nn-1", time.Now(), time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey().MarshalBinary()
	cases := []struct {
		proposer string
		kind     errs.Kind // 0: published
	}{
		{"", errs.Permission},
		{"nn-2", errs.Permission},
		{"nn", errs.Permission}, // a prefix of the owner is not the owner
		{"nn-1", 0},
	}
	for _, c := range cases {
		t.Run("proposer="+c.proposer, func(t *testing.T) {
			f := New(Config{Superuser: "root", Supergroup: "supergroup"})
			r := permApply(t, f, CmdRegisterKey, &api.RegisterKeyCommand{PublicKey: pub, Proposer: c.proposer})
			if got := permKind(r); got != c.kind {
				t.Fatalf("kind %v (%s), want %v", got, r.ErrorMsg, c.kind)
			}
			if _, published := f.PublicKey(kp.KID); published != (c.kind == 0) {
				t.Fatalf("key published = %v", published)
			}
		})
	}
	if got := security.KeyOwner("nn-1-0a1b"); got != "nn-1" {
		t.Fatalf("keyOwner = %q", got)
	}
}
