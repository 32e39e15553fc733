//go:build !linux

package store

import bolt "go.etcd.io/bbolt"

// adviseReader does nothing here (see the Linux version).
func adviseReader(db *bolt.DB, path string) {}
