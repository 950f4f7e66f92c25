//go:build !linux

package vfs

// Files of this system do not implement WritableMapper (no fallocate to
// reserve a mapped log's blocks): logs are written with write calls.
