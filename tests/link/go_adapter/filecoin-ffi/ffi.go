// Package ffi stands in for filecoin-ffi: PartitionProof as it is defined there.
package ffi

import "github.com/filecoin-project/go-state-types/proof"

type PartitionProof proof.PoStProof
