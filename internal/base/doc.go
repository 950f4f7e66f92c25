// Package base holds the engine's shared vocabulary: the internal-key
// names of package kv (aliases and wrappers, so the public packages'
// signatures name kv's public types while the engine keeps these names),
// file names, the prefix-seek interface and corruption errors.
//
// See package kv for the internal-key layout and its invariants.
//
// Everything here is a pure function or a constant, safe for concurrent use.
package base
