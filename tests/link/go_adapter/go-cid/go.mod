module github.com/ipfs/go-cid

go 1.22
