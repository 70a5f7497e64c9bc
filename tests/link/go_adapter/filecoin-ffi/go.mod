module github.com/filecoin-project/filecoin-ffi

go 1.22

require github.com/filecoin-project/go-state-types v0.0.0
