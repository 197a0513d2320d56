package main

import (
	"crypto/ed25519"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/security"
)

// keySet is the (user, inode) pairs a series cycles through, and for the
// verifier one valid read token per pair.
type keySet struct {
	users  []string
	inodes []uint64
	toks   [][]byte
}

// newKeySet makes n distinct pairs (users repeat every 509 keys, inodes
// never) and signs a token for each with is (a per-request issuer).
func newKeySet(n int, is *security.Issuer) *keySet {
	ks := &keySet{users: make([]string, n), inodes: make([]uint64, n), toks: make([][]byte, n)}
	for i := range n {
		ks.users[i] = fmt.Sprintf("user%d", i%509)
		ks.inodes[i] = 1_000_000 + uint64(i)
		tok, err := is.FileToken(ks.users[i], ks.inodes[i], security.Read)
		if err != nil {
			log.Fatal(err)
		}
		ks.toks[i] = tok
	}
	return ks
}

// series is one measured configuration: a side, a workload, optionally the
// KUDU-3210 global mutex around every call.
type series struct {
	side     string // issuer or verifier
	workload string // none, hit or miss
	global   bool
	n        int              // keys cycled through
	op       func(i int) bool // one operation on key i; false: it failed
	reg      *prometheus.Registry
	cursor   atomic.Int64 // next key of the none and miss series
}

// counters returns the cache hit and miss counts of s's issuer or verifier
// so far.
func (s *series) counters() (hits, misses float64) {
	mfs, err := s.reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	hitName, missName := "blockfs_security_token_cache_hits_total", "blockfs_security_token_cache_misses_total"
	if s.side == "verifier" {
		hitName, missName = "blockfs_security_verify_cache_hits_total", "blockfs_security_verify_cache_misses_total"
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case hitName:
			hits = mf.GetMetric()[0].GetCounter().GetValue()
		case missName:
			misses = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return hits, misses
}

// newIssuerSeries: none signs every call (per-request mode); hit and miss
// run the cached mode over the hit set or the whole (miss) set.
func newIssuerSeries(cfg security.Config, km security.SigningKeys, workload string, keys *keySet, hitSet int) *series {
	c := cfg
	c.Mode = security.Cached
	n := len(keys.users)
	switch workload {
	case "none":
		c.Mode = security.PerRequest
	case "hit":
		n = hitSet
	}
	reg := prometheus.NewRegistry()
	is, err := security.NewIssuer(c, km, reg)
	if err != nil {
		log.Fatal(err)
	}
	return &series{side: "issuer", workload: workload, n: n, reg: reg, op: func(i int) bool {
		_, err := is.FileToken(keys.users[i], keys.inodes[i], security.Read)
		return err == nil
	}}
}

// newVerifierSeries: none checks every signature (cache off); hit and miss
// run the cache over the hit set or the whole (miss) set.
func newVerifierSeries(cfg security.Config, pub security.KeyLookup, workload string, keys *keySet, hitSet int, global bool) *series {
	c := cfg
	c.VerifyCache = workload != "none"
	n := len(keys.toks)
	if workload == "hit" {
		n = hitSet
	}
	reg := prometheus.NewRegistry()
	v, err := security.NewVerifier(c, pub, reg)
	if err != nil {
		log.Fatal(err)
	}
	op := func(i int) bool {
		_, err := v.Verify(keys.toks[i], security.Request{Inode: keys.inodes[i], Access: security.Read})
		return err == nil
	}
	if global {
		var mu sync.Mutex // the KUDU-3210 anti-pattern: every check under one lock
		inner := op
		op = func(i int) bool {
			mu.Lock()
			defer mu.Unlock()
			return inner(i)
		}
	}
	return &series{side: "verifier", workload: workload, global: global, n: n, reg: reg, op: op}
}

// warm runs every key of s twice, so a hit series starts with its keys
// cached and a miss series with a full cache (the issuer caches a key on
// its second miss: its doorkeeper).
func (s *series) warm() {
	for range 2 {
		for i := range s.n {
			if !s.op(i) {
				log.Fatalf("%s/%s: warm-up operation %d failed", s.side, s.workload, i)
			}
		}
	}
}

// run calls s.op from g goroutines for d and returns operations per
// second.
//
// The none and miss series draw keys from one cursor shared by all
// goroutines and kept across runs, so every key comes round again only
// after all the others: no goroutine trails another into hits, and no run
// starts on keys the last one left cached. The atomic add it costs is
// nothing beside a signature. The hit series must not pay it (it measures
// calls of well under a microsecond that share nothing): each goroutine
// cycles through its own slice of the hit set.
func (s *series) run(g int, d time.Duration) (opsPerSec, cpuPerOp float64) {
	cpu0 := cpuTime()
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		lo, hi := w*s.n/g, (w+1)*s.n/g
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, i := int64(0), lo
			for !stop.Load() {
				if s.workload != "hit" {
					i = int(s.cursor.Add(1) % int64(s.n))
				}
				if !s.op(i) {
					log.Fatalf("%s/%s: operation on key %d failed", s.side, s.workload, i)
				}
				n++
				if i++; i == hi {
					i = lo
				}
			}
			total.Add(n)
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	ops := float64(total.Load())
	return ops / time.Since(start).Seconds(), (cpuTime() - cpu0).Seconds() / ops
}

// cpuTime is the CPU time (user and system) this process has used. Unlike
// wall time it does not count time lost to other processes on the machine,
// so CPU per operation compares costs even when the machine is busy.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// control measures bare ed25519.Verify with g goroutines: the machine's own
// scaling ceiling for the signature check (no JWT, no cache, no metrics), so
// a missed scaling floor can be told apart from contention in the verifier.
func control(g int, d time.Duration) float64 {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		log.Fatal(err)
	}
	msg := make([]byte, 200)
	sig := ed25519.Sign(priv, msg)
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for !stop.Load() {
				if !ed25519.Verify(pub, msg, sig) {
					log.Fatal("control: bad signature")
				}
				n++
			}
			total.Add(n)
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}
