// Package abi stands in for go-state-types' abi: the types the adapter converts, with their
// underlying types.
package abi

type SectorNumber uint64

type ActorID uint64

type Randomness []byte

type PoStRandomness Randomness

type RegisteredPoStProof int64

type RegisteredUpdateProof int64
