package lbm

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/blockfs/blockfs/errs"
)

// A container whose metadata replay finds corruption is set aside, as
// HDFS takes a failed volume out of service: its files are renamed (never
// deleted) so an operator can inspect or restore them, and the store opens
// without it. Its blocks are not in the index, so the datanode's full
// block report leaves them out and the namenode re-replicates them.

// corruptContainer is a container whose replay failed with errs.Corrupt.
type corruptContainer struct {
	d                *dataDir
	id               string
	hasData, hasMeta bool
	err              error
}

// SetAside returns the files Open renamed aside (paths after the rename,
// <id>.data.corrupt-<unix> and <id>.metadata.corrupt-<unix>), sorted.
func (s *Store) SetAside() []string { return slices.Clone(s.setAside) }

// setAsideAll renames every corrupt container aside. When every one of
// several containers is corrupt, the cause is more likely the store's
// configuration (a wrong server key, a wrong directory) than the disks:
// nothing is renamed and Open fails with the first error, as HDFS stops a
// datanode whose every volume failed.
func (s *Store) setAsideAll(cs []corruptContainer, total int) error {
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > 1 && len(cs) == total {
		return errs.Wrap(errs.Corrupt, "lbm.Open", "",
			fmt.Errorf("all %d containers failed replay (wrong server key or data dir?); first: %w", total, cs[0].err))
	}
	now := time.Now().Unix()
	for _, c := range cs {
		s.setAsideOne(c, now)
	}
	slices.Sort(s.setAside)
	return nil
}

func (s *Store) setAsideOne(cc corruptContainer, now int64) {
	base := cc.d.path + "/" + cc.id
	suffix := fmt.Sprintf(".corrupt-%d", now)
	var renamed []string
	for _, p := range []struct {
		path string
		has  bool
	}{{base + ".data", cc.hasData}, {base + ".metadata", cc.hasMeta}} {
		if !p.has {
			continue
		}
		to := p.path + suffix
		if err := s.fs.Rename(p.path, to); err != nil && !errors.Is(err, os.ErrNotExist) {
			// Not renamed: it is skipped this time and found again at
			// the next start.
			s.log.Error("lbm: cannot rename corrupt container file aside", "file", p.path, "err", err)
			to = p.path
		}
		renamed = append(renamed, to)
	}
	if err := s.fs.SyncDir(cc.d.path); err != nil {
		s.log.Error("lbm: fsync after setting a container aside", "dir", cc.d.path, "err", err)
	}
	s.setAside = append(s.setAside, renamed...)
	s.metrics.setAside.Inc()
	s.log.Error("lbm: container metadata is corrupt; set aside, its blocks are reported lost",
		"container", base, "err", cc.err, "renamed", renamed)
}
