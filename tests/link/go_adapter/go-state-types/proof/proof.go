// Package proof stands in for go-state-types' proof: PoStProof as it is defined there.
package proof

import "github.com/filecoin-project/go-state-types/abi"

type PoStProof struct {
	PoStProof  abi.RegisteredPoStProof
	ProofBytes []byte
}
