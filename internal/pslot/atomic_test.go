package pslot

import "sync/atomic"

func atomicAdd(p *int64) { atomic.AddInt64(p, 1) }
