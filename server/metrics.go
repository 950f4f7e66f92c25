package server

import (
	"sync/atomic"
	"time"
)

// nodeMetrics counts what the node's write batcher and read rounds did.
type nodeMetrics struct {
	groups, groupCmds, groupBytes, groupErrs atomic.Uint64
	readRounds                               atomic.Uint64
}

func newNodeMetrics() *nodeMetrics { return &nodeMetrics{} }

func (m *nodeMetrics) groupSubmitted(cmds, bytes int) {
	m.groups.Add(1)
	m.groupCmds.Add(uint64(cmds))
	m.groupBytes.Add(uint64(bytes))
}

func (m *nodeMetrics) groupDone(_ time.Duration, err error) {
	if err != nil {
		m.groupErrs.Add(1)
	}
}

func (m *nodeMetrics) readRound(time.Duration) { m.readRounds.Add(1) }
