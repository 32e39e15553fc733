// Package ctime reads a file's status change time (ctime), which moves
// with any change to the file's content or attributes, even one that puts
// the modification time back: index records it beside size and mtime, and
// serve checks a file against it.
package ctime
