module github.com/filecoin-project/go-fil-commcid

go 1.22

require github.com/ipfs/go-cid v0.0.0
