package robustness

import "math/rand/v2"

// OpPaths are the few paths the namespace workload works on, so that
// operations collide; ListDirs are the directories it lists.
var (
	OpPaths  = []string{"/a", "/b", "/a/x", "/b/x"}
	ListDirs = []string{"/", "/a", "/b"}
)

// RandomOp draws one operation of the workload's mix: mkdir 15%, create
// 15%, delete 12%, rename 15%, stat 23%, list 20%.
func RandomOp(rng *rand.Rand) Input {
	p := OpPaths[rng.IntN(len(OpPaths))]
	switch x := rng.IntN(100); {
	case x < 15:
		return Input{Kind: OpMkdir, Path: p}
	case x < 30:
		return Input{Kind: OpCreate, Path: p}
	case x < 42:
		return Input{Kind: OpDelete, Path: p}
	case x < 57:
		return Input{Kind: OpRename, Path: p, Dst: OpPaths[rng.IntN(len(OpPaths))]}
	case x < 80:
		return Input{Kind: OpStat, Path: p}
	default:
		return Input{Kind: OpList, Path: ListDirs[rng.IntN(len(ListDirs))]}
	}
}
