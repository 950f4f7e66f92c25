// Package cputime reads the process's CPU time, for the benchmark tools
// (cmd/kvbench and bench/compare) to report CPU per operation beside
// wall-clock rates: on a shared machine the CPU an operation takes moves
// far less with the load than the operations per second do.
package cputime
