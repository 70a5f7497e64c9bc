package cuzk

// The Filecoin types of the proving calls, named as in go-state-types (abi and proof packages)
// with the same underlying types and the same values, so that code holding go-state-types
// values calls this package through conversions: cuzk.ActorID(minerID),
// cuzk.RegisteredPoStProof(p), abi.RegisteredPoStProof(q). The package itself depends on
// nothing outside the standard library (the Go module proxy is not needed to build it).
// The values are those of the proofs library (filecoin-proofs' registered proof enums) and never
// change.

// SectorNumber is abi.SectorNumber: a sector's number, relative to its miner.
type SectorNumber uint64

// ActorID is abi.ActorID: a miner's actor id (the 1000 of f01000).
type ActorID uint64

// PoStRandomness is abi.PoStRandomness: the 32-byte challenge randomness of a PoSt.
type PoStRandomness []byte

// RegisteredPoStProof is abi.RegisteredPoStProof: a PoSt kind and sector size.
type RegisteredPoStProof int64

// The PoSt proof types, as go-state-types names and numbers them.
const (
	RegisteredPoStProof_StackedDrgWinning2KiBV1   = RegisteredPoStProof(0)
	RegisteredPoStProof_StackedDrgWinning8MiBV1   = RegisteredPoStProof(1)
	RegisteredPoStProof_StackedDrgWinning512MiBV1 = RegisteredPoStProof(2)
	RegisteredPoStProof_StackedDrgWinning32GiBV1  = RegisteredPoStProof(3)
	RegisteredPoStProof_StackedDrgWinning64GiBV1  = RegisteredPoStProof(4)

	RegisteredPoStProof_StackedDrgWindow2KiBV1   = RegisteredPoStProof(5)
	RegisteredPoStProof_StackedDrgWindow8MiBV1   = RegisteredPoStProof(6)
	RegisteredPoStProof_StackedDrgWindow512MiBV1 = RegisteredPoStProof(7)
	RegisteredPoStProof_StackedDrgWindow32GiBV1  = RegisteredPoStProof(8)
	RegisteredPoStProof_StackedDrgWindow64GiBV1  = RegisteredPoStProof(9)

	RegisteredPoStProof_StackedDrgWindow2KiBV1_1   = RegisteredPoStProof(10)
	RegisteredPoStProof_StackedDrgWindow8MiBV1_1   = RegisteredPoStProof(11)
	RegisteredPoStProof_StackedDrgWindow512MiBV1_1 = RegisteredPoStProof(12)
	RegisteredPoStProof_StackedDrgWindow32GiBV1_1  = RegisteredPoStProof(13)
	RegisteredPoStProof_StackedDrgWindow64GiBV1_1  = RegisteredPoStProof(14)
)

// RegisteredUpdateProof is abi.RegisteredUpdateProof: a SnapDeals (empty sector update)
// proof's sector size.
type RegisteredUpdateProof int64

// The update proof types, as go-state-types names and numbers them.
const (
	RegisteredUpdateProof_StackedDrg2KiBV1   = RegisteredUpdateProof(0)
	RegisteredUpdateProof_StackedDrg8MiBV1   = RegisteredUpdateProof(1)
	RegisteredUpdateProof_StackedDrg512MiBV1 = RegisteredUpdateProof(2)
	RegisteredUpdateProof_StackedDrg32GiBV1  = RegisteredUpdateProof(3)
	RegisteredUpdateProof_StackedDrg64GiBV1  = RegisteredUpdateProof(4)
)

// PoStProof is proof.PoStProof: a proof type and its proof bytes. Go converts between struct
// types only when their fields' types are identical, so the go-state-types value is built
// field by field: proof.PoStProof{PoStProof: abi.RegisteredPoStProof(p.PoStProof),
// ProofBytes: p.ProofBytes}.
type PoStProof struct {
	PoStProof  RegisteredPoStProof
	ProofBytes []byte
}

// PartitionProof is filecoin-ffi's PartitionProof (`type PartitionProof proof.PoStProof`): the
// proof of one Window PoSt partition, as GenerateSinglePartitionWindowPoStWithVanilla returns it.
type PartitionProof PoStProof
