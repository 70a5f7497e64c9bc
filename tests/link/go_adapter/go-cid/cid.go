// Package cid stands in for go-cid: Cid is a struct value there too.
package cid

type Cid struct{ str string }
