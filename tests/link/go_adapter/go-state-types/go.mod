module github.com/filecoin-project/go-state-types

go 1.22
