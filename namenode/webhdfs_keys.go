package namenode

import "github.com/blockfs/blockfs/security"

// fsmKeys looks up the token-signing public keys every namenode published
// through Raft, so that this namenode checks a redirect token signed by
// any of them (a datanode acting for a WebHDFS user may call any
// namenode). Keys are few; each lookup decodes one under the FSM's read
// lock.
type fsmKeys struct{ n *Namenode }

func (k fsmKeys) Lookup(kid string) (*security.PublicKey, bool) {
	f := k.n.fsm
	if f == nil {
		return nil, false
	}
	b, ok := f.PublicKey(kid)
	if !ok {
		return nil, false
	}
	var pk security.PublicKey
	if pk.UnmarshalBinary(b) != nil {
		return nil, false
	}
	return &pk, true
}
