// Package search ranks stored vectors against a query embedding by cosine
// similarity. It declares the TextEncoder interface it needs.
package search
