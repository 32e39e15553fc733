// Package store owns the on-disk index: a bbolt file holding L2-normalised
// vectors, file records and the model identity. It is the only package that
// imports go.etcd.io/bbolt.
package store
