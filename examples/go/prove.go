package cuzk

/*
#include <stdlib.h>
#include <string.h>
#include "cuzk.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// Assignment is a synthesized circuit ready to prove. Prove consumes it; otherwise Close it.
type Assignment struct{ h handle }

func newAssignment(p *C.struct_cuzk_assignment) *Assignment {
	a := &Assignment{handle{ptr: unsafe.Pointer(p)}}
	runtime.SetFinalizer(a, func(a *Assignment) { a.Close() })
	return a
}

// NewR1CSAssignment synthesizes r with a witness (public inputs without the constant one,
// then aux values), into buffers from pool (nil: heap memory).
func NewR1CSAssignment(r *R1CS, pool *Pool, public, aux [][]byte) (*Assignment, error) {
	pub, err := flatten("public", public)
	if err != nil {
		return nil, err
	}
	ax, err := flatten("aux", aux)
	if err != nil {
		return nil, err
	}
	var out *C.struct_cuzk_assignment
	err = r.h.use(func(rp unsafe.Pointer) error {
		synth := func(pp unsafe.Pointer) error {
			return call(func(e **C.char) C.enum_cuzk_status {
				return C.cuzk_assignment_new_r1cs((*C.struct_cuzk_r1cs)(rp), (*C.struct_cuzk_pool)(pp),
					bytesPtr(pub), C.size_t(len(public)), bytesPtr(ax), C.size_t(len(aux)), &out, e)
			})
		}
		if pool == nil {
			return synth(nil)
		}
		return pool.h.use(synth)
	})
	if err != nil {
		return nil, err
	}
	return newAssignment(out), nil
}

// RawAssignment is an assignment computed by the caller (see cuzk_raw_assignment in cuzk.h):
// A, B, C are pool buffers holding NumConstraints scalars each in Montgomery form (see
// ToMontgomery), the input rows (one, then each public input: A = value, B = C = 0) last;
// densities are bit sets (variable i at bit i%64 of word i/64).
type RawAssignment struct {
	A, B, C        *Buffer
	NumConstraints int
	Public, Aux    [][]byte
	AAuxDensity    []uint64 // len(Aux) bits
	BInputDensity  []uint64 // 1 + len(Public) bits (bit 0: the constant one)
	BAuxDensity    []uint64 // len(Aux) bits
}

// cCopy copies b into C memory (nil for empty); the caller frees it.
func cCopy(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return C.CBytes(b)
}

func wordsBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
}

// NewRawAssignment makes an assignment from raw parts. The three buffers pass to the
// library whatever the outcome (they are closed here) and return to their pool after
// proving.
func NewRawAssignment(raw RawAssignment) (*Assignment, error) {
	bufs := []*Buffer{raw.A, raw.B, raw.C}
	var ptrs [3]unsafe.Pointer
	for i, b := range bufs {
		if b != nil {
			runtime.SetFinalizer(b, nil)
			ptrs[i] = b.h.take()
		}
	}
	// The description lives in C memory: cgo forbids passing Go memory that holds Go pointers.
	var toFree []unsafe.Pointer
	defer func() {
		for _, p := range toFree {
			C.free(p)
		}
	}()
	keep := func(p unsafe.Pointer) unsafe.Pointer { toFree = append(toFree, p); return p }
	desc := (*C.struct_cuzk_raw_assignment)(keep(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_cuzk_raw_assignment{})))))
	desc.a = (*C.struct_cuzk_buffer)(ptrs[0])
	desc.b = (*C.struct_cuzk_buffer)(ptrs[1])
	desc.c = (*C.struct_cuzk_buffer)(ptrs[2])
	fail := func(err error) (*Assignment, error) {
		// Hand the buffers over anyway, as documented: the library frees them.
		var out *C.struct_cuzk_assignment
		desc.num_constraints = 0
		_ = call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_assignment_new_raw(desc, &out, e) })
		if out != nil {
			C.cuzk_assignment_free(out)
		}
		return nil, err
	}
	if raw.NumConstraints < 0 {
		return fail(&Error{StatusInvalidArgument, "negative NumConstraints"})
	}
	pub, err := flatten("public", raw.Public)
	if err != nil {
		return fail(err)
	}
	ax, err := flatten("aux", raw.Aux)
	if err != nil {
		return fail(err)
	}
	need := func(name string, w []uint64, bits int) error {
		if len(w)*64 < bits {
			return &Error{StatusInvalidArgument, fmt.Sprintf("%s has %d words; %d bits need %d", name, len(w), bits, (bits+63)/64)}
		}
		return nil
	}
	for _, c := range []error{
		need("AAuxDensity", raw.AAuxDensity, len(raw.Aux)),
		need("BInputDensity", raw.BInputDensity, 1+len(raw.Public)),
		need("BAuxDensity", raw.BAuxDensity, len(raw.Aux)),
	} {
		if c != nil {
			return fail(c)
		}
	}
	desc.num_constraints = C.size_t(raw.NumConstraints)
	desc.public_inputs = (*C.uint8_t)(keep(cCopy(pub)))
	desc.num_public = C.size_t(len(raw.Public))
	desc.aux = (*C.uint8_t)(keep(cCopy(ax)))
	desc.num_aux = C.size_t(len(raw.Aux))
	desc.a_aux_density = (*C.uint64_t)(keep(cCopy(wordsBytes(raw.AAuxDensity))))
	desc.b_input_density = (*C.uint64_t)(keep(cCopy(wordsBytes(raw.BInputDensity))))
	desc.b_aux_density = (*C.uint64_t)(keep(cCopy(wordsBytes(raw.BAuxDensity))))
	var out *C.struct_cuzk_assignment
	if err := call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_assignment_new_raw(desc, &out, e) }); err != nil {
		return nil, err
	}
	return newAssignment(out), nil
}

// Close frees an assignment that will not be proved; a second Close (or a Close after
// Prove) returns ErrClosed.
func (a *Assignment) Close() error {
	runtime.SetFinalizer(a, nil)
	return closeWith(&a.h, func(p unsafe.Pointer) { C.cuzk_assignment_free((*C.struct_cuzk_assignment)(p)) })
}

// Backend chooses where a prover runs.
type Backend int

// Backends.
const (
	Auto Backend = C.CUZK_BACKEND_AUTO
	CPU  Backend = C.CUZK_BACKEND_CPU
	GPU  Backend = C.CUZK_BACKEND_GPU
)

// Timings says where the time of a Prove call went.
type Timings struct {
	Synthesis, H, MSMH, MSML, MSMA, MSMBG1, MSMBG2, MSMBatch, Tail, Total time.Duration
}

// Prover proves batches of assignments; safe for concurrent use.
type Prover struct{ h handle }

// NewProver makes a prover on backend (gpu names the device for GPU) with an optional pool.
func NewProver(backend Backend, gpu int, pool *Pool) (*Prover, error) {
	if gpu < 0 {
		return nil, &Error{StatusInvalidArgument, "negative GPU index"}
	}
	if backend != Auto && backend != CPU && backend != GPU {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("unknown backend %d", int(backend))}
	}
	var out *C.struct_cuzk_prover
	mk := func(pp unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_prover_new(C.cuzk_backend(backend), C.uint32_t(gpu), (*C.struct_cuzk_pool)(pp), &out, e)
		})
	}
	var err error
	if pool == nil {
		err = mk(nil)
	} else {
		err = pool.h.use(mk)
	}
	if err != nil {
		return nil, err
	}
	p := &Prover{handle{ptr: unsafe.Pointer(out)}}
	runtime.SetFinalizer(p, func(p *Prover) { p.Close() })
	return p, nil
}

// BackendName is "cpu" or "cuda" ("" once closed).
func (p *Prover) BackendName() string {
	name := ""
	_ = p.h.use(func(ptr unsafe.Pointer) error {
		name = C.GoString(C.cuzk_prover_backend_name((*C.struct_cuzk_prover)(ptr)))
		return nil
	})
	return name
}

// Prove proves the assignments with params, returning one 192-byte proof each. r and s are
// both nil (drawn from the OS) or one 32-byte scalar per assignment each. The assignments
// are consumed whatever the outcome.
func (p *Prover) Prove(params *Params, assignments []*Assignment, r, s [][]byte) ([][]byte, Timings, error) {
	ptrs := make([]*C.struct_cuzk_assignment, len(assignments))
	var closed error
	for i, a := range assignments {
		if a == nil {
			closed = &Error{StatusNullArgument, fmt.Sprintf("assignment %d is nil", i)}
			continue
		}
		runtime.SetFinalizer(a, nil)
		if ptr := a.h.take(); ptr != nil {
			ptrs[i] = (*C.struct_cuzk_assignment)(ptr)
		} else if closed == nil {
			closed = fmt.Errorf("assignment %d: %w", i, ErrClosed)
		}
	}
	free := func() {
		for _, ptr := range ptrs {
			if ptr != nil {
				C.cuzk_assignment_free(ptr)
			}
		}
	}
	var t Timings
	if closed != nil {
		free()
		return nil, t, closed
	}
	if (r == nil) != (s == nil) || (r != nil && (len(r) != len(assignments) || len(s) != len(assignments))) {
		free()
		return nil, t, &Error{StatusInvalidArgument, fmt.Sprintf("r and s: both nil or %d each", len(assignments))}
	}
	rb, err := flatten("r", r)
	if err == nil {
		var sb []byte
		if sb, err = flatten("s", s); err == nil {
			out := make([]byte, len(assignments)*ProofBytes)
			var ct C.struct_cuzk_timings
			err = p.h.use(func(pp unsafe.Pointer) error {
				return params.h.use(func(par unsafe.Pointer) error {
					var arr **C.struct_cuzk_assignment
					if len(ptrs) > 0 {
						arr = &ptrs[0]
					}
					return call(func(e **C.char) C.enum_cuzk_status {
						return C.cuzk_prove((*C.struct_cuzk_prover)(pp), (*C.struct_cuzk_params)(par), arr,
							C.size_t(len(ptrs)), bytesPtr(rb), bytesPtr(sb), bytesPtr(out), C.size_t(len(out)), &ct, e)
					})
				})
			})
			if err == nil {
				proofs := make([][]byte, len(assignments))
				for i := range proofs {
					proofs[i] = out[i*ProofBytes : (i+1)*ProofBytes : (i+1)*ProofBytes]
				}
				d := func(ns C.uint64_t) time.Duration { return time.Duration(ns) }
				t = Timings{d(ct.synthesis_ns), d(ct.h_ns), d(ct.msm_h_ns), d(ct.msm_l_ns), d(ct.msm_a_ns),
					d(ct.msm_b_g1_ns), d(ct.msm_b_g2_ns), d(ct.msm_batch_ns), d(ct.tail_ns), d(ct.total_ns)}
				return proofs, t, nil
			}
			if err == ErrClosed {
				// The prover or params were closed: cuzk_prove never ran, so free here.
				free()
			}
			return nil, t, err
		}
	}
	free()
	return nil, t, err
}

// Close frees the prover; a second Close returns ErrClosed.
func (p *Prover) Close() error {
	runtime.SetFinalizer(p, nil)
	return closeWith(&p.h, func(ptr unsafe.Pointer) { C.cuzk_prover_free((*C.struct_cuzk_prover)(ptr)) })
}

// Verify checks a proof against a verifying key (Params.VerifyingKey) and the public inputs
// (without the constant one). false means the proof does not verify; an error means the
// inputs could not be checked (malformed key or proof, wrong number of inputs).
func Verify(vk, proof []byte, public [][]byte) (bool, error) {
	pub, err := flatten("public", public)
	if err != nil {
		return false, err
	}
	var valid C.bool
	err = call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_verify(bytesPtr(vk), C.size_t(len(vk)), bytesPtr(proof), C.size_t(len(proof)),
			bytesPtr(pub), C.size_t(len(public)), &valid, e)
	})
	return bool(valid), err
}
