package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/blockfs/blockfs/api"
	"github.com/blockfs/blockfs/client"
)

// The quota commands (rows of the commands table, main.go), after hdfs
// dfsadmin's -setQuota, -clrQuota, -setSpaceQuota, -clrSpaceQuota and hdfs
// dfs -count.

// quotaCmd returns the run function of a set or clear command, of the
// namespace quota or (space) the space quota.
func quotaCmd(name string, set, space bool) func(e *env, _ *flag.FlagSet, args []string) error {
	return func(e *env, _ *flag.FlagSet, args []string) error {
		v := client.QuotaReset
		if set {
			var err error
			if v, err = parseQuota(args[0], space); err != nil {
				return usageErr{fmt.Sprintf("%s: %v", name, err)}
			}
			args = args[1:]
		}
		ns, ds := v, client.QuotaDontSet
		if space {
			ns, ds = client.QuotaDontSet, v
		}
		for _, p := range args {
			if err := checkPath(name, p); err != nil {
				e.fail(err)
				continue
			}
			if err := e.cl.SetQuota(e.ctx, p, ns, ds); err != nil {
				e.fail(&pathErr{name, p, err})
			}
		}
		return nil
	}
}

// parseQuota parses a quota: a positive integer, for a space quota with
// an optional binary suffix k, m, g, t, p or e (HDFS's
// TraditionalBinaryPrefix.string2long: 10g is 10×2^30).
func parseQuota(s string, space bool) (int64, error) {
	num, shift := s, 0
	if space && s != "" {
		if i := strings.IndexByte("kmgtpe", lower(s[len(s)-1])); i >= 0 {
			num, shift = s[:len(s)-1], 10*(i+1)
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > math.MaxInt64>>shift || v<<shift == math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return v << shift, nil
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func countFlags(fs *flag.FlagSet) {
	fs.Bool("q", false, "show quotas and what remains of them")
	fs.Bool("h", false, "human-readable sizes (1.5 K, 10 G)")
}

// cmdCount prints HDFS's dfs -count lines: "%12s %12s %18s %s" (dirs,
// files, bytes, path), with -q preceded by "%12s %15s %15s %15s " (quota,
// remaining, space quota, remaining space), "none" and "inf" where no
// quota is set.
func cmdCount(e *env, fs *flag.FlagSet, args []string) error {
	q, h := flagBool(fs, "q"), flagBool(fs, "h")
	for _, p := range args {
		if err := checkPath("count", p); err != nil {
			e.fail(err)
			continue
		}
		cs, err := e.cl.ContentSummary(e.ctx, p)
		if err != nil {
			e.fail(&pathErr{"count", p, err})
			continue
		}
		fmt.Fprintln(e.stdout, countLine(cs, p, q, h))
	}
	return nil
}

// countLine formats one line of dfs -count (see cmdCount).
func countLine(cs *api.ContentSummary, p string, q, h bool) string {
	line := fmt.Sprintf("%12d %12d %18s %s", cs.DirectoryCount, cs.FileCount, size(cs.Length, h), p)
	if !q {
		return line
	}
	quota, rem, squota, srem := "none", "inf", "none", "inf"
	if cs.Quota >= 0 {
		quota, rem = strconv.FormatInt(cs.Quota, 10), strconv.FormatInt(cs.Quota-cs.DirectoryCount-cs.FileCount, 10)
	}
	if cs.SpaceQuota >= 0 {
		squota, srem = size(cs.SpaceQuota, h), size(cs.SpaceQuota-cs.SpaceConsumed, h)
	}
	return fmt.Sprintf("%12s %15s %15s %15s %s", quota, rem, squota, srem, line)
}

// size formats n bytes, with h as HDFS's long2String(n, "", 1) does: below
// 1024 the number, else one decimal (none when exact) and K, M, G, T, P, E.
func size(n int64, h bool) string {
	if !h {
		return strconv.FormatInt(n, 10)
	}
	if n < 0 {
		return "-" + size(-n, h)
	}
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	i := 0
	for i < 5 && n>>(10*(i+2)) > 0 {
		i++
	}
	shift := 10 * (i + 1)
	if n&(1<<shift-1) == 0 {
		return strconv.FormatInt(n>>shift, 10) + " " + string("KMGTPE"[i])
	}
	s := strconv.FormatFloat(float64(n)/float64(int64(1)<<shift), 'f', 1, 64)
	if strings.HasPrefix(s, "1024") && i < 5 {
		i++
		s = strconv.FormatFloat(float64(n)/float64(int64(1)<<(shift+10)), 'f', 1, 64)
	}
	return s + " " + string("KMGTPE"[i])
}
