// Command blockmgmt measures block management (issue 22) in one run:
//
//   - placement: the ns one AddBlock's target choice costs
//     (blocks.Manager.ChooseTargets, 3 replicas) with 10, 100, 1,000 and
//     10,000 registered datanodes over 10 racks, median of --runs; the
//     floor is at most 2x from 10 to 10,000 datanodes (O(replicas), not
//     O(datanodes));
//
//   - decommission: the MB/s at which one datanode's bytes are
//     re-replicated (from the Decommission call to the datanode
//     Decommissioned) on an in-process cluster of 5 datanodes in 2 racks,
//     against the datapath floor measured in the same run on the same
//     cluster: the slower of a client write at replication 1 (each byte
//     once to one datanode's disk, the work of a copy) and a client read
//     of the same bytes (as bench/datapath measures put and get); the
//     floor is 0.5x;
//
//   - balancer: the MB/s of a balancer run under its bandwidth limit
//     (balancer.go), median of min(--runs, 3) clusters; the floor is
//     within 10% of the limit.
//
//     go run ./bench/blockmgmt                  # the sizes
//     go run ./bench/blockmgmt --quick          # a smoke run, seconds
//     go run ./bench/blockmgmt --json out.json
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/blockfs/blockfs/bench/internal/results"
)

// Output is the whole run, as --json writes it.
type Output struct {
	Placement    []PlacementRow  `json:"placement"`
	Decommission DecommissionRow `json:"decommission"`
	Balancer     balancerResult  `json:"balancer"`
}

func main() {
	log.SetFlags(0)
	runs := flag.Int("runs", 5, "runs; rows are medians over runs (the decommission part runs min(runs, 3) clusters)")
	size := flag.Int64("size-mib", 256, "decommission: MiB the cluster holds (replication 3) before one datanode is decommissioned")
	calls := flag.Int("calls", 200_000, "placement: target choices per run and cluster size")
	quick := flag.Bool("quick", false, "smoke run: 1 run, 20k choices, 32 MiB")
	jsonOut := flag.String("json", "", "write the rows as JSON to this file")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the first run's decommission phase to this file")
	flag.Parse()
	if *quick {
		*runs, *calls, *size = 1, 20_000, 32
	}
	if *runs < 1 || *calls < 1 || *size < 1 {
		log.Fatal("--runs, --calls and --size-mib must be positive")
	}
	ctx := context.Background()
	var out Output
	var err error
	start := time.Now()
	if out.Placement, err = runPlacement(*runs, *calls); err != nil {
		log.Fatal(err)
	}
	printPlacement(os.Stdout, out.Placement)
	fmt.Println()
	if out.Decommission, err = runDecommission(ctx, min(*runs, 3), *size<<20); err != nil {
		log.Fatal(err)
	}
	printDecommission(os.Stdout, out.Decommission)
	fmt.Println()
	if out.Balancer, err = runBalancer(ctx, min(*runs, 3)); err != nil {
		log.Fatal(err)
	}
	printBalancer(os.Stdout, out.Balancer)
	fmt.Printf("\ntook %v\n", time.Since(start).Round(time.Second))
	if *jsonOut != "" {
		if err := results.WriteJSON(*jsonOut, out); err != nil {
			log.Fatal(err)
		}
	}
}

// verdict says whether ratio meets floor (at most floor when atMost).
func verdict(ratio, floor float64, atMost bool) string {
	if (atMost && ratio <= floor) || (!atMost && ratio >= floor) {
		return "ok"
	}
	return "MISSED"
}
