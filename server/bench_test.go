package server

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReplicatedSet measures SET throughput through go-redis on
// loopback: pipelines of 64 SETs (16-byte keys, 100-byte values) from
// 8 concurrent clients, against a one-node cluster and a three-node
// cluster in this process. Every SET is acknowledged only after raft
// committed it: appended to a quorum's logs with fsync (the default,
// synced raftstore) and applied on the leader. BENCH_NOSYNC=1 drops the
// log's fsyncs, to see what they cost.
//
//	go test -run '^$' -bench ReplicatedSet -benchtime 5s -count 3 .
func BenchmarkReplicatedSet(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		b.Run(fmt.Sprintf("nodes=%d/pipeline=64/clients=8", nodes), func(b *testing.B) {
			benchSet(b, nodes, 64, 8)
		})
	}
}

func benchSet(b *testing.B, nodes, depth, clients int) {
	cl := newCluster(b, nodes, func(c *Config) {
		// raft's default timings, not the tests' short ones: on a loaded
		// machine those make elections flap under this load.
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, c.CommitTimeout = 0, 0, 0, 0
		c.ApplyTimeout = 30 * time.Second
		c.NoSync = os.Getenv("BENCH_NOSYNC") != ""
	})
	_, leader := cl.leader()
	val := make([]byte, 100)
	var next atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((clients + procs - 1) / procs) // RunParallel runs parallelism * GOMAXPROCS goroutines
	b.SetBytes(int64(depth * (16 + len(val))))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := newClient(b, leader.Addr())
		for pb.Next() {
			base := next.Add(int64(depth)) - int64(depth)
			pipe := c.Pipeline()
			for i := range int64(depth) {
				pipe.Set(ctx, fmt.Sprintf("key%013d", base+i), val, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(next.Load())/time.Since(start).Seconds(), "sets/s")
}
