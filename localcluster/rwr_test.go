package localcluster_test

import (
	"context"
	"testing"
	"time"
)

// TestHsyncSurvivesPipelineRestart: a writer hsyncs a partial block and
// dies; every datanode of its pipeline restarts before any recovery, so
// the replica being written is on disk only (a waiting replica, HDFS's
// RWR). Block recovery finalizes it from there: the file closes holding
// every hsynced byte, byte-identical, on 3 replicas.
func TestHsyncSurvivesPipelineRestart(t *testing.T) {
	c, cl := startLeaseCluster(t)
	writer := clientAs(t, c, "alice")
	const p = "/shared/rwr"
	data := randBytes(2*blockSize + 700)
	w := create(t, writer, p)
	mustWrite(t, w, data[:blockSize+100])
	if err := w.Hsync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, data[blockSize+100:])
	if err := w.Hsync(); err != nil {
		t.Fatal(err)
	}
	locs, err := cl.GetBlockLocations(ctxT(t), p, 0, 0)
	if err != nil || len(locs.Blocks) != 3 {
		t.Fatalf("locations while writing: %v %v", locs, err)
	}
	last := locs.Blocks[len(locs.Blocks)-1]
	if len(last.Locations) != 3 {
		t.Fatalf("the block being written lists %d datanodes, want its pipeline of 3", len(last.Locations))
	}
	w.Abort() // the process is gone: nothing renews its lease
	var pipeline []int
	for _, l := range last.Locations {
		for i := range c.Datanodes() {
			if c.DatanodeID(i) == l.Id {
				pipeline = append(pipeline, i)
			}
		}
	}
	for _, i := range pipeline {
		if err := c.StopDatanode(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range pipeline {
		if err := c.RestartDatanode(ctxT(t), i); err != nil {
			t.Fatal(err)
		}
	}
	hsynced := int64(len(data)) - int64(last.Offset)
	for _, i := range pipeline {
		wr, ok := c.Datanode(i).Store().Waiting(last.Block.Id)
		if !ok || wr.Length != hsynced {
			t.Fatalf("datanode %s after restart: waiting replica %+v %v, want %d bytes", c.DatanodeID(i), wr, ok, hsynced)
		}
	}
	time.Sleep(softLimit + 200*time.Millisecond)
	closed, err := cl.RecoverLease(ctxT(t), p)
	if err != nil {
		t.Fatalf("recoverLease: %v", err)
	}
	if !closed {
		ctx, cancel := context.WithTimeout(context.Background(), 20*hardLimit)
		defer cancel()
		if err := cl.WaitClosed(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cl.Stat(ctxT(t), p)
	if err != nil || st.UnderConstruction || st.Length != uint64(len(data)) {
		t.Fatalf("recovered file: %+v %v; want %d bytes", st, err, len(data))
	}
	readBack(t, cl, p, data)
	checkReplicas(t, c, cl, p, data, 3)
	for _, i := range pipeline {
		if wr, ok := c.Datanode(i).Store().Waiting(last.Block.Id); ok {
			t.Fatalf("datanode %s still has a waiting replica after recovery: %+v", c.DatanodeID(i), wr)
		}
	}
}
