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
// cuzk as jobs of an engine: the process-wide Filecoin engine (package-level functions, or a
// nil *Engine; ConfigureFilecoin or the CUZK_FILECOIN_* variables configure it) or an Engine
// of the caller's (its methods). Each kind has a priority (PriorityWinningPoSt >
// PriorityWindowPoSt > PrioritySealCommit = PrioritySnapDeals): a Winning PoSt submitted
// during a stream of PoRep C2 partitions goes to the GPU before the ones still waiting. The
// Submit… forms return a *FilecoinJob at once (Wait, Cancel, Progress, OnProgress) and take a
// priority (PriorityDefault: the kind's). Parameters are read from filecoin-proofs' parameter
// cache (FIL_PROOFS_PARAMETER_CACHE, default /var/tmp/filecoin-proof-parameters/) and kept loaded
// (and resident on the GPU) for the life of the process. Each proof is checked against the
// parameters' verifying key before it is returned. The argument and result types are
// go-state-types' (filecoin_types.go), so these signatures are filecoin-ffi's (and Curio's
// ffidirect's) up to the package of the types: GenerateUpdateProofWithVanilla takes the
// commitments as CID bytes (cid.Cid.Bytes()).

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

// Engine priorities of the Filecoin proof kinds (higher goes first), and PriorityDefault: "the
// kind's" for a Submit… call.
const (
	PriorityDefault     int32 = C.CUZK_PRIORITY_DEFAULT
	PriorityWinningPoSt int32 = C.CUZK_PRIORITY_WINNING_POST
	PriorityWindowPoSt  int32 = C.CUZK_PRIORITY_WINDOW_POST
	PrioritySealCommit  int32 = C.CUZK_PRIORITY_SEAL_COMMIT
	PrioritySnapDeals   int32 = C.CUZK_PRIORITY_SNAP_DEALS
)

// ConfigureFilecoin sets the configuration of the process-wide Filecoin engine, which starts
// with it at the first proof that uses it (the CUZK_FILECOIN_GPUS, CUZK_FILECOIN_BUDGET and
// CUZK_FILECOIN_SYNTHESIS_THREADS variables are then not read). It fails with
// StatusInvalidArgument once that engine has started.
func ConfigureFilecoin(cfg EngineConfig) error {
	c, err := cfg.cConfig()
	if err != nil {
		return err
	}
	return call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_filecoin_configure(&c, e) })
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

// withEngine runs f with eng's C pointer, or NULL (the process-wide Filecoin engine) when eng
// is nil.
func withEngine(eng *Engine, f func(pe *C.struct_cuzk_engine) error) error {
	if eng == nil {
		return f(nil)
	}
	return eng.h.use(func(ptr unsafe.Pointer) error { return f((*C.struct_cuzk_engine)(ptr)) })
}

// FilecoinJob is a Filecoin proof submitted to an engine (a Submit… call). Safe for concurrent
// use: Cancel, Progress and OnProgress may be called while another goroutine Waits. Close it
// when done (it cancels a job not yet over, then waits for a Wait under way to return); until
// then it holds its Engine (a Submit… method's receiver), as a Job does. Its Cancel, Progress,
// OnProgress and Close are a Job's (job.go). Every blocking Filecoin call is its Submit…
// twin, then Wait.
type FilecoinJob struct{ *jobCore }

// submitted takes a job a cuzk_filecoin_submit_* call wrote on eng (nil: the process-wide
// Filecoin engine), which the job holds until it is closed.
func submitted(eng *Engine, p *C.struct_cuzk_filecoin_job, err error) (*FilecoinJob, error) {
	if err != nil {
		return nil, err
	}
	core, err := newJobCore(filecoinJobKind, unsafe.Pointer(p), eng)
	if err != nil {
		return nil, err
	}
	return &FilecoinJob{core}, nil
}

// Wait blocks until the job is over and returns the proof bytes (192 per partition, in
// order), checked against the parameters' verifying key; or why it failed (*Error:
// StatusCancelled after Cancel, a partition's failure, ...). The result can be taken once: a
// second Wait returns StatusInvalidArgument.
func (j *FilecoinJob) Wait() ([]byte, error) {
	var out C.struct_cuzk_bytes
	err := j.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_filecoin_job_wait((*C.struct_cuzk_filecoin_job)(p), &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return takeBytes(out), nil
}

// waitFor is a blocking call: the job its Submit… twin made, waited for and closed.
func waitFor(j *FilecoinJob, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer j.Close()
	return j.Wait()
}

// SealCommitPhase2 is filecoin-ffi's SealCommitPhase2 on the process-wide Filecoin engine:
// phase1Output is SealCommitPhase1's output (filecoin-ffi's JSON), and the result the proof
// bytes (192 per partition).
func SealCommitPhase2(phase1Output []byte, sectorNum SectorNumber, minerID ActorID) ([]byte, error) {
	return (*Engine)(nil).SealCommitPhase2(phase1Output, sectorNum, minerID)
}

// SealCommitPhase2 is the package-level SealCommitPhase2 on this engine (nil: the
// process-wide Filecoin engine).
func (eng *Engine) SealCommitPhase2(phase1Output []byte, sectorNum SectorNumber, minerID ActorID) ([]byte, error) {
	return waitFor(eng.SubmitSealCommitPhase2(PriorityDefault, phase1Output, sectorNum, minerID))
}

// SubmitSealCommitPhase2 is SealCommitPhase2 without blocking, at priority (PriorityDefault:
// PrioritySealCommit), on the process-wide Filecoin engine.
func SubmitSealCommitPhase2(priority int32, phase1Output []byte, sectorNum SectorNumber, minerID ActorID) (*FilecoinJob, error) {
	return (*Engine)(nil).SubmitSealCommitPhase2(priority, phase1Output, sectorNum, minerID)
}

// SubmitSealCommitPhase2 is the package-level SubmitSealCommitPhase2 on this engine.
func (eng *Engine) SubmitSealCommitPhase2(priority int32, phase1Output []byte, sectorNum SectorNumber, minerID ActorID) (*FilecoinJob, error) {
	proverID := ProverID(minerID)
	c1 := cCopy(phase1Output)
	defer C.free(c1)
	var job *C.struct_cuzk_filecoin_job
	err := withEngine(eng, func(pe *C.struct_cuzk_engine) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			p, n, id := (*C.uint8_t)(c1), C.size_t(len(phase1Output)), (*C.uint8_t)(unsafe.Pointer(&proverID[0]))
			return C.cuzk_filecoin_submit_seal_commit_phase2(pe, C.int32_t(priority), p, n, C.uint64_t(sectorNum), id, &job, e)
		})
	})
	return submitted(eng, job, err)
}

// GenerateUpdateProofWithVanilla is Curio's (and filecoin-ffi's)
// FunctionsSectorUpdate.GenerateUpdateProofWithVanilla on the process-wide Filecoin engine,
// with the CIDs as their bytes (cid.Cid.Bytes()): key is the sector key's CommR
// (oldSealedCID), sealed the updated replica's (newSealedCID), both fil-commitment-sealed CIDs
// (codec 0xf102, multihash poseidon-bls12_381-a2-fc1 0xb401); unsealed the new data's CommD, a
// fil-commitment-unsealed CID (0xf101, sha2-256-trunc254-padded 0x1012). Any other CID is
// refused (StatusInvalidArgument, naming the CID and the problem). vproofs are the partition
// proofs of GenerateUpdateVanillaProofs, in order.
func GenerateUpdateProofWithVanilla(proofType RegisteredUpdateProof, key, sealed, unsealed []byte, vproofs [][]byte) ([]byte, error) {
	return (*Engine)(nil).GenerateUpdateProofWithVanilla(proofType, key, sealed, unsealed, vproofs)
}

// GenerateUpdateProofWithVanilla is the package-level function on this engine.
func (eng *Engine) GenerateUpdateProofWithVanilla(proofType RegisteredUpdateProof, key, sealed, unsealed []byte, vproofs [][]byte) ([]byte, error) {
	return waitFor(eng.SubmitUpdateProofWithVanilla(PriorityDefault, proofType, key, sealed, unsealed, vproofs))
}

// SubmitUpdateProofWithVanilla is GenerateUpdateProofWithVanilla without blocking, at priority
// (PriorityDefault: PrioritySnapDeals), on the process-wide Filecoin engine.
func SubmitUpdateProofWithVanilla(priority int32, proofType RegisteredUpdateProof, key, sealed, unsealed []byte, vproofs [][]byte) (*FilecoinJob, error) {
	return (*Engine)(nil).SubmitUpdateProofWithVanilla(priority, proofType, key, sealed, unsealed, vproofs)
}

// SubmitUpdateProofWithVanilla is the package-level function on this engine.
func (eng *Engine) SubmitUpdateProofWithVanilla(priority int32, proofType RegisteredUpdateProof, key, sealed, unsealed []byte, vproofs [][]byte) (*FilecoinJob, error) {
	return eng.update(priority, proofType, [3][]byte{key, sealed, unsealed}, true, vproofs)
}

// GenerateUpdateProofWithCommitments is GenerateUpdateProofWithVanilla with the commitments
// as their 32-byte values (a CID's multihash digest): commROld the sector key's CommR,
// commRNew the updated replica's, commDNew the new data's CommD.
func GenerateUpdateProofWithCommitments(proofType RegisteredUpdateProof, commROld, commRNew, commDNew []byte, vproofs [][]byte) ([]byte, error) {
	return (*Engine)(nil).GenerateUpdateProofWithCommitments(proofType, commROld, commRNew, commDNew, vproofs)
}

// GenerateUpdateProofWithCommitments is the package-level function on this engine.
func (eng *Engine) GenerateUpdateProofWithCommitments(proofType RegisteredUpdateProof, commROld, commRNew, commDNew []byte, vproofs [][]byte) ([]byte, error) {
	for _, c := range []struct {
		name string
		b    []byte
	}{{"commROld", commROld}, {"commRNew", commRNew}, {"commDNew", commDNew}} {
		if err := check32(c.name, c.b); err != nil {
			return nil, err
		}
	}
	return waitFor(eng.update(PriorityDefault, proofType, [3][]byte{commROld, commRNew, commDNew}, false, vproofs))
}

func (eng *Engine) update(priority int32, proofType RegisteredUpdateProof, comms [3][]byte, cids bool, vproofs [][]byte) (*FilecoinJob, error) {
	if proofType < 0 {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("update proof type %d", proofType)}
	}
	arr, free := cSlices(vproofs)
	defer free()
	var cs [3]*C.uint8_t
	for i, b := range comms {
		p := cCopy(b)
		defer C.free(p)
		cs[i] = (*C.uint8_t)(p)
	}
	var job *C.struct_cuzk_filecoin_job
	err := withEngine(eng, func(pe *C.struct_cuzk_engine) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			pr, typ, n := C.int32_t(priority), C.uint64_t(proofType), C.size_t(len(vproofs))
			l0, l1, l2 := C.size_t(len(comms[0])), C.size_t(len(comms[1])), C.size_t(len(comms[2]))
			if cids {
				return C.cuzk_filecoin_submit_snap_prove_cids(pe, pr, typ, arr, n, cs[0], l0, cs[1], l1, cs[2], l2, &job, e)
			}
			return C.cuzk_filecoin_submit_snap_prove(pe, pr, typ, arr, n, cs[0], cs[1], cs[2], &job, e)
		})
	})
	return submitted(eng, job, err)
}

// GenerateWinningPoStWithVanilla is filecoin-ffi's GenerateWinningPoStWithVanilla on the
// process-wide Filecoin engine: randomness is the 32-byte abi.PoStRandomness, proofs the
// vanilla proofs of the challenged sectors (GenerateSingleVanillaProof).
func GenerateWinningPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return (*Engine)(nil).GenerateWinningPoStWithVanilla(proofType, minerID, randomness, proofs)
}

// GenerateWinningPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) GenerateWinningPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	b, err := waitFor(eng.post(postWinning, 0, PriorityDefault, proofType, minerID, randomness, proofs))
	if err != nil {
		return nil, err
	}
	return []PoStProof{{PoStProof: proofType, ProofBytes: b}}, nil
}

// SubmitWinningPoStWithVanilla is GenerateWinningPoStWithVanilla without blocking, at
// priority (PriorityDefault: PriorityWinningPoSt), on the process-wide Filecoin engine; its
// Wait gives the proof bytes.
func SubmitWinningPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) (*FilecoinJob, error) {
	return (*Engine)(nil).SubmitWinningPoStWithVanilla(priority, proofType, minerID, randomness, proofs)
}

// SubmitWinningPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) SubmitWinningPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) (*FilecoinJob, error) {
	return eng.post(postWinning, 0, priority, proofType, minerID, randomness, proofs)
}

// GenerateWindowPoStWithVanilla is filecoin-ffi's GenerateWindowPoStWithVanilla on the
// process-wide Filecoin engine: proofs are the vanilla proofs of the PoSt's sectors, in sector
// order.
func GenerateWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	return (*Engine)(nil).GenerateWindowPoStWithVanilla(proofType, minerID, randomness, proofs)
}

// GenerateWindowPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) GenerateWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error) {
	b, err := waitFor(eng.post(postWindow, 0, PriorityDefault, proofType, minerID, randomness, proofs))
	if err != nil {
		return nil, err
	}
	return []PoStProof{{PoStProof: proofType, ProofBytes: b}}, nil
}

// SubmitWindowPoStWithVanilla is GenerateWindowPoStWithVanilla without blocking, at priority
// (PriorityDefault: PriorityWindowPoSt), on the process-wide Filecoin engine.
func SubmitWindowPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) (*FilecoinJob, error) {
	return (*Engine)(nil).SubmitWindowPoStWithVanilla(priority, proofType, minerID, randomness, proofs)
}

// SubmitWindowPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) SubmitWindowPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) (*FilecoinJob, error) {
	return eng.post(postWindow, 0, priority, proofType, minerID, randomness, proofs)
}

// GenerateSinglePartitionWindowPoStWithVanilla is filecoin-ffi's (and Curio's)
// GenerateSinglePartitionWindowPoStWithVanilla on the process-wide Filecoin engine: proofs are
// the vanilla proofs of one partition's sectors only, in sector order, partitionIndex the
// partition's index in the Window PoSt (one SubmitWindowedPoSt message's partitions, from 0).
// The partitions' ProofBytes concatenated in index order are the Window PoSt (filecoin-proofs'
// merge_window_post_partition_proofs). An index past the partitions one Window PoSt of the
// proof type holds (the miner actor's limit: 10 for 32 and 64 GiB sectors, 3000 for the test
// sizes) is refused with StatusInvalidArgument.
func GenerateSinglePartitionWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error) {
	return (*Engine)(nil).GenerateSinglePartitionWindowPoStWithVanilla(proofType, minerID, randomness, proofs, partitionIndex)
}

// GenerateSinglePartitionWindowPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) GenerateSinglePartitionWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error) {
	b, err := waitFor(eng.post(postWindowPartition, partitionIndex, PriorityDefault, proofType, minerID, randomness, proofs))
	if err != nil {
		return nil, err
	}
	return &PartitionProof{PoStProof: proofType, ProofBytes: b}, nil
}

// SubmitSinglePartitionWindowPoStWithVanilla is GenerateSinglePartitionWindowPoStWithVanilla
// without blocking, at priority (PriorityDefault: PriorityWindowPoSt), on the process-wide
// Filecoin engine; its Wait gives the partition's proof bytes.
func SubmitSinglePartitionWindowPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte, partitionIndex uint) (*FilecoinJob, error) {
	return (*Engine)(nil).SubmitSinglePartitionWindowPoStWithVanilla(priority, proofType, minerID, randomness, proofs, partitionIndex)
}

// SubmitSinglePartitionWindowPoStWithVanilla is the package-level function on this engine.
func (eng *Engine) SubmitSinglePartitionWindowPoStWithVanilla(priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte, partitionIndex uint) (*FilecoinJob, error) {
	return eng.post(postWindowPartition, partitionIndex, priority, proofType, minerID, randomness, proofs)
}

type postKind int

const (
	postWinning postKind = iota
	postWindow
	postWindowPartition
)

func (eng *Engine) post(kind postKind, partition uint, priority int32, proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) (*FilecoinJob, error) {
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
	var job *C.struct_cuzk_filecoin_job
	err := withEngine(eng, func(pe *C.struct_cuzk_engine) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			pr, typ, n := C.int32_t(priority), C.uint64_t(proofType), C.size_t(len(proofs))
			r, id, k := (*C.uint8_t)(rnd), (*C.uint8_t)(pid), C.uint64_t(partition)
			switch kind {
			case postWinning:
				return C.cuzk_filecoin_submit_winning_post(pe, pr, typ, r, id, arr, n, &job, e)
			case postWindow:
				return C.cuzk_filecoin_submit_window_post(pe, pr, typ, r, id, arr, n, &job, e)
			default:
				return C.cuzk_filecoin_submit_window_post_partition(pe, pr, typ, r, id, arr, n, k, &job, e)
			}
		})
	})
	return submitted(eng, job, err)
}
