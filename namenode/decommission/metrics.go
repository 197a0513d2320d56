package decommission

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/blockfs/blockfs/blocks"
)

type collector struct {
	b                  *blocks.Manager
	state, blocks, byt *prometheus.Desc
}

// NewCollector exports, computed at scrape time from the block map:
// blockfs_datanodes_admin_state{state} (registered datanodes by admin
// state, HDFS's names), and blockfs_decommission_blocks_left and
// blockfs_decommission_bytes_left (summed over the datanodes leaving:
// what they still wait for).
func NewCollector(b *blocks.Manager) prometheus.Collector {
	return &collector{
		b:      b,
		state:  prometheus.NewDesc("blockfs_datanodes_admin_state", "Registered datanodes by admin state.", []string{"state"}, nil),
		blocks: prometheus.NewDesc("blockfs_decommission_blocks_left", "Blocks that datanodes decommissioning or entering maintenance still wait to have copied.", nil, nil),
		byt:    prometheus.NewDesc("blockfs_decommission_bytes_left", "Bytes of those blocks.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.blocks
	ch <- c.byt
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for st, k := range c.b.AdminCounts() {
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, float64(k), st.HDFS())
	}
	var left, bytes float64
	for _, d := range c.b.Datanodes() {
		if s := d.Admin.State; s != blocks.AdminDecommissioning && s != blocks.AdminEnteringMaintenance {
			continue
		}
		if p, ok := c.b.AdminProgress(d.ID, false); ok {
			left += float64(p.Blocks)
			bytes += float64(p.Bytes)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.blocks, prometheus.GaugeValue, left)
	ch <- prometheus.MustNewConstMetric(c.byt, prometheus.GaugeValue, bytes)
}
