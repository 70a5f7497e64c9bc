module github.com/filecoin-project/cuzk/examples/go

go 1.22
