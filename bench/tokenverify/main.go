// Command tokenverify measures block-token verifications per second on the
// datanode side, KUDU-3210 style: 1, 2, 4 and 8 goroutines, with the
// verified-token cache off and on, over a realistic token set (--tokens
// distinct valid per-request tokens, cycled), and with --global-mutex the
// same runs with the verifier wrapped in one mutex (the KUDU-3210
// anti-pattern) for contrast. Every configuration is measured in the same
// run; speedup is against 1 goroutine, cache off, no global mutex.
//
//	go run ./bench/tokenverify --json out.json --duration 2s
package main

import (
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/blockfs/blockfs/security"
)

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
	for w := 0; w < g; w++ {
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

// Row is one line of the JSON output.
type Row struct {
	Goroutines     int     `json:"goroutines"`
	Cache          bool    `json:"cache"`
	GlobalMutex    bool    `json:"global_mutex"`
	VerifiesPerSec float64 `json:"verifies_per_sec"`
	Speedup        float64 `json:"speedup"` // vs 1 goroutine, cache off, no global mutex
}

type verifier interface {
	Verify(tok []byte, want security.Request) (security.Claims, error)
}

// locked is the KUDU-3210 anti-pattern: every verification under one mutex.
type locked struct {
	mu sync.Mutex
	v  *security.Verifier
}

func (l *locked) Verify(tok []byte, want security.Request) (security.Claims, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.v.Verify(tok, want)
}

func main() {
	jsonOut := flag.String("json", "", "write rows as JSON to this file")
	duration := flag.Duration("duration", 2*time.Second, "measuring time per configuration")
	nTokens := flag.Int("tokens", 1000, "distinct valid tokens cycled through")
	globalMutex := flag.Bool("global-mutex", true, "also measure the verifier wrapped in one global mutex")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run")
	flag.Parse()
	log.SetFlags(0)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}

	cfg := security.DefaultConfig()
	cfg.Mode = security.PerRequest
	cfg.TokenLifetime = time.Hour // outlives any run
	km, err := security.NewKeyManager(cfg)
	if err != nil {
		log.Fatal(err)
	}
	pk, err := km.Rotate(time.Now())
	if err != nil {
		log.Fatal(err)
	}
	ks := security.NewKeySet(cfg.TokenLifetime, cfg.ClockSkew)
	if err := ks.Add(pk); err != nil {
		log.Fatal(err)
	}
	is, err := security.NewIssuer(cfg, km, nil)
	if err != nil {
		log.Fatal(err)
	}
	toks := make([][]byte, *nTokens)
	reqs := make([]security.Request, *nTokens)
	for i := range toks {
		user := fmt.Sprintf("user%d", i%37)
		if toks[i], err = is.FileToken(user, uint64(1000+i), security.Read); err != nil {
			log.Fatal(err)
		}
		reqs[i] = security.Request{Inode: uint64(1000 + i), Access: security.Read}
	}

	newVerifier := func(cache bool) *security.Verifier {
		c := cfg
		c.VerifyCache = cache
		v, err := security.NewVerifier(c, ks, nil)
		if err != nil {
			log.Fatal(err)
		}
		return v
	}

	type setup struct {
		cache, global bool
	}
	setups := []setup{{false, false}, {true, false}}
	if *globalMutex {
		setups = append(setups, setup{false, true}, setup{true, true})
	}
	fmt.Printf("tokenverify: %d tokens of ~%d bytes, %v per configuration, GOMAXPROCS=%d NumCPU=%d\n",
		len(toks), len(toks[0]), *duration, runtime.GOMAXPROCS(0), runtime.NumCPU())

	// The control runs right before the rows it explains, so both see the
	// same load from whatever else shares the machine.
	c1, c2 := control(1, *duration), control(2, *duration)

	var rows []Row
	for _, s := range setups {
		for _, g := range []int{1, 2, 4, 8} {
			sv := newVerifier(s.cache)
			var v verifier = sv
			if s.global {
				v = &locked{v: sv}
			}
			// Warm up (and fill the cache when it is on).
			run(v, toks, reqs, 1, 200*time.Millisecond)
			if s.cache && sv.CacheLen() != len(toks) {
				for i := range toks {
					if _, err := v.Verify(toks[i], reqs[i]); err != nil {
						log.Fatal(err)
					}
				}
			}
			rate := run(v, toks, reqs, g, *duration)
			rows = append(rows, Row{Goroutines: g, Cache: s.cache, GlobalMutex: s.global, VerifiesPerSec: rate})
		}
	}
	base := rows[0].VerifiesPerSec
	for i := range rows {
		rows[i].Speedup = rows[i].VerifiesPerSec / base
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "goroutines\tcache\tlock\tverifies/s\tspeedup vs 1g uncached\t")
	for _, r := range rows {
		lock := "sharded"
		if r.GlobalMutex {
			lock = "global mutex"
		}
		cache := "off"
		if r.Cache {
			cache = "on"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%.2fx\t\n", r.Goroutines, cache, lock, r.VerifiesPerSec, r.Speedup)
	}
	tw.Flush()

	find := func(g int, cache, global bool) float64 {
		for _, r := range rows {
			if r.Goroutines == g && r.Cache == cache && r.GlobalMutex == global {
				return r.VerifiesPerSec
			}
		}
		return 0
	}
	check := func(name string, got, floor float64) {
		verdict := "ok"
		if got < floor {
			verdict = "MISSED"
		}
		fmt.Printf("floor %-40s %6.2fx (floor %.1fx) %s\n", name, got, floor, verdict)
	}
	check("2 goroutines uncached / 1 uncached", find(2, false, false)/base, 1.6)
	fmt.Printf("control: bare ed25519.Verify 1 goroutine %.0f/s, 2 goroutines %.0f/s (%.2fx): the machine's ceiling for the floor above\n", c1, c2, c2/c1)
	check("1 goroutine cached / 1 uncached", find(1, true, false)/base, 30)

	if *jsonOut != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// run verifies with g goroutines for d, each cycling through the tokens from
// its own offset, and returns verifications per second. Every verification
// must succeed.
func run(v verifier, toks [][]byte, reqs []security.Request, g int, d time.Duration) float64 {
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func(off int) {
			defer wg.Done()
			n, i := int64(0), off
			for !stop.Load() {
				if _, err := v.Verify(toks[i], reqs[i]); err != nil {
					log.Fatalf("verify: %v", err)
				}
				n++
				if i++; i == len(toks) {
					i = 0
				}
			}
			total.Add(n)
		}(w * len(toks) / g)
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(total.Load()) / time.Since(start).Seconds()
}
