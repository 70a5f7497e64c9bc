package cuzk

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Filecoin proofs (the library's `filecoin` feature): the functions below take the bytes
// filecoin-ffi's functions of the same names take and return the bytes they return, proved by
// cuzk. Parameters are read from filecoin-proofs' parameter cache (FIL_PROOFS_PARAMETER_CACHE,
// default /var/tmp/filecoin-proof-parameters/) and kept loaded (and resident on the GPU) for
// the life of the process. Each proof is checked against the parameters' verifying key
// before it is returned. The argument and result types are go-state-types' (filecoin_types.go),
// so these signatures are filecoin-ffi's up to the package of the types; the one difference is
// GenerateUpdateProofWithVanilla's commitments (32 bytes each, not CIDs).

// StatusFilecoin and StatusUnsupported are the statuses of the Filecoin functions: filecoin-proofs
// refused the inputs, or the library was built without the `filecoin` feature.
const (
	StatusFilecoin    Status = C.CUZK_STATUS_FILECOIN
	StatusUnsupported Status = C.CUZK_STATUS_UNSUPPORTED
)

func init() {
	statusNames[StatusFilecoin] = "filecoin"
	statusNames[StatusUnsupported] = "unsupported"
}

// FilecoinAvailable says whether the linked library was built with the `filecoin` feature;
// without it every Filecoin function fails with StatusUnsupported.
func FilecoinAvailable() bool { return bool(C.cuzk_filecoin_available()) }

// ProverID is the 32-byte prover id filecoin-ffi makes from a miner actor id (toProverID: the
// payload of the ID address f0<minerID>).
func ProverID(minerID ActorID) [32]byte {
	var out [32]byte
	// The call cannot fail with a valid 32-byte buffer.
	_ = call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_filecoin_prover_id(C.uint64_t(minerID), (*C.uint8_t)(unsafe.Pointer(&out[0])), e)
	})
	return out
}

// takeBytes copies library-owned bytes into Go memory and frees them.
func takeBytes(b C.struct_cuzk_bytes) []byte {
	defer C.cuzk_bytes_free(b)
	if b.data == nil || b.len == 0 {
		return []byte{}
	}
	return C.GoBytes(unsafe.Pointer(b.data), C.int(b.len))
}

// cSlices copies byte strings into C memory as a cuzk_byte_slice array (cgo forbids passing Go
// memory that holds Go pointers); free releases it all.
func cSlices(items [][]byte) (arr *C.struct_cuzk_byte_slice, free func()) {
	if len(items) == 0 {
		return nil, func() {}
	}
	size := C.size_t(unsafe.Sizeof(C.struct_cuzk_byte_slice{})) * C.size_t(len(items))
	arr = (*C.struct_cuzk_byte_slice)(C.malloc(size))
	view := unsafe.Slice(arr, len(items))
	for i, it := range items {
		view[i].data = (*C.uint8_t)(cCopy(it))
		view[i].len = C.size_t(len(it))
	}
	return arr, func() {
		for i := range view {
			C.free(unsafe.Pointer(view[i].data))
		}
		C.free(unsafe.Pointer(arr))
	}
}

func check32(name string, b []byte) error {
	if len(b) != 32 {
		return &Error{StatusInvalidArgument, fmt.Sprintf("%s has %d bytes; 32 expected", name, len(b))}
	}
	return nil
}

// withProver runs f with p's C pointer, or NULL (an Auto prover) when p is nil.
func withProver(p *Prover, f func(pp *C.struct_cuzk_prover) error) error {
	if p == nil {
		return f(nil)
	}
	return p.h.use(func(ptr unsafe.Pointer) error { return f((*C.struct_cuzk_prover)(ptr)) })
}

// SealCommitPhase2 is filecoin-ffi's SealCommitPhase2 on an Auto prover (the GPU when the
// library has CUDA and finds one): phase1Output is SealCommitPhase1's output (filecoin-ffi's
// JSON), and the result the proof bytes (192 per partition).
func SealCommitPhase2(phase1Output []byte, sectorNum SectorNumber, minerID ActorID) ([]byte, error) {
	return (*Prover)(nil).SealCommitPhase2(phase1Output, sectorNum, minerID)
}

// SealCommitPhase2 is the package-level SealCommitPhase2 on this prover (a nil *Prover means an
// Auto prover).
func (p *Prover) SealCommitPhase2(phase1Output []byte, sectorNum SectorNumber, minerID ActorID) ([]byte, error) {
	proverID := ProverID(minerID)
	c1 := cCopy(phase1Output)
	defer C.free(c1)
	var out C.struct_cuzk_bytes
	err := withProver(p, func(pp *C.struct_cuzk_prover) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_filecoin_seal_commit_phase2(pp, (*C.uint8_t)(c1), C.size_t(len(phase1Output)),
				C.uint64_t(sectorNum), (*C.uint8_t)(unsafe.Pointer(&proverID[0])), &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return takeBytes(out), nil
}

// GenerateUpdateProofWithVanilla is filecoin-ffi's FunctionsSectorUpdate.GenerateUpdateProofWithVanilla
// on an Auto prover, with the commitments as 32-byte values instead of CIDs: commROld is the
// sector key's CommR (filecoin-ffi's oldSealedCID, Curio's key), commRNew the updated
// replica's (newSealedCID, sealed), commDNew the new data's CommD (unsealedCID, unsealed). A
// CID's commitment is its multihash digest (go-fil-commcid: CIDToReplicaCommitmentV1 for the
// sealed CIDs, CIDToDataCommitmentV1 for the unsealed one, which also check the codec and the
// hash function). vanillaProofs are the partition proofs of GenerateUpdateVanillaProofs, in
// order.
func GenerateUpdateProofWithVanilla(proofType RegisteredUpdateProof, commROld, commRNew, commDNew []byte, vanillaProofs [][]byte) ([]byte, error) {
	return (*Prover)(nil).GenerateUpdateProofWithVanilla(proofType, commROld, commRNew, commDNew, vanillaProofs)
}

// GenerateUpdateProofWithVanilla is the package-level function on this prover.
func (p *Prover) GenerateUpdateProofWithVanilla(proofType RegisteredUpdateProof, commROld, commRNew, commDNew []byte, vanillaProofs [][]byte) ([]byte, error) {
	for _, c := range []struct {
		name string
		b    []byte
	}{{"commROld", commROld}, {"commRNew", commRNew}, {"commDNew", commDNew}} {
		if err := check32(c.name, c.b); err != nil {
			return nil, err
		}
	}
	if proofType < 0 {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("update proof type %d", proofType)}
	}
	arr, free := cSlices(vanillaProofs)
	defer free()
	rOld, rNew, dNew := cCopy(commROld), cCopy(commRNew), cCopy(commDNew)
	defer C.free(rOld)
	defer C.free(rNew)
	defer C.free(dNew)
	var out C.struct_cuzk_bytes
	err := withProver(p, func(pp *C.struct_cuzk_prover) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_filecoin_snap_prove(pp, C.uint64_t(proofType), arr, C.size_t(len(vanillaProofs)),
				(*C.uint8_t)(rOld), (*C.uint8_t)(rNew), (*C.uint8_t)(dNew), &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return takeBytes(out), nil
}

// GenerateWinningPoStWithVanilla is filecoin-ffi's GenerateWinningPoStWithVanilla on an Auto
// prover: randomness is the 32-byte abi.PoStRandomness, proofs the vanilla proofs of the
// challenged sectors (GenerateSingleVanillaProof).
func GenerateWinningPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return (*Prover)(nil).GenerateWinningPoStWithVanilla(proofType, minerID, randomness, proofs)
}

// GenerateWinningPoStWithVanilla is the package-level function on this prover.
func (p *Prover) GenerateWinningPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return p.post(false, proofType, minerID, randomness, proofs)
}

// GenerateWindowPoStWithVanilla is filecoin-ffi's GenerateWindowPoStWithVanilla on an Auto
// prover: proofs are the vanilla proofs of the partition's sectors, in sector order.
func GenerateWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return (*Prover)(nil).GenerateWindowPoStWithVanilla(proofType, minerID, randomness, proofs)
}

// GenerateWindowPoStWithVanilla is the package-level function on this prover.
func (p *Prover) GenerateWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return p.post(true, proofType, minerID, randomness, proofs)
}

func (p *Prover) post(window bool, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	if err := check32("randomness", randomness); err != nil {
		return nil, err
	}
	if proofType < 0 {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("PoSt proof type %d", proofType)}
	}
	proverID := ProverID(minerID)
	arr, free := cSlices(proofs)
	defer free()
	rnd := cCopy(randomness)
	defer C.free(rnd)
	pid := cCopy(proverID[:])
	defer C.free(pid)
	var out C.struct_cuzk_bytes
	err := withProver(p, func(pp *C.struct_cuzk_prover) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			typ, n := C.uint64_t(proofType), C.size_t(len(proofs))
			r, id := (*C.uint8_t)(rnd), (*C.uint8_t)(pid)
			if window {
				return C.cuzk_filecoin_window_post(pp, typ, r, id, arr, n, &out, e)
			}
			return C.cuzk_filecoin_winning_post(pp, typ, r, id, arr, n, &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return []PoStProof{{PoStProof: proofType, ProofBytes: takeBytes(out)}}, nil
}
