// Package cuzk wraps cuzk's C ABI (include/cuzk.h) for Go: Groth16 proofs on BLS12-381,
// byte-compatible with bellperson, on an NVIDIA GPU when the library is built with CUDA.
//
// Conventions: every failure is an error value (a *Error carrying the library's status code,
// or ErrClosed); every handle has Close (idempotent in effect: a second Close returns
// ErrClosed) and a finalizer as a safety net; scalars are 32-byte little-endian canonical
// byte slices; proofs are 192-byte slices. Handles are safe for concurrent use, except that
// an Assignment or Buffer has one owner at a time.
//
// Import it as cuzk "github.com/filecoin-project/cuzk/examples/go", with a replace directive
// pointing at a checkout (README.md says why and shows the go.mod lines).
//
// Linking: the package links cuzk's static library through pkg-config, from the cuzk.pc
// that scripts/build-lib.sh writes beside this file (with the flags of the features the
// library was built with: CUDA adds -lcuda -lstdc++); it compiles against cuzk.h, its
// committed copy of include/cuzk.h. From the repository root:
//
//	scripts/build-lib.sh [--features cuda]
//	cd examples/go && go test ./...
//
// That library's only global symbols are the cuzk_* functions, so it links beside any other
// Rust static library (filecoin-ffi's libfilcrypto.a among them) in either order.
package cuzk

/*
#cgo pkg-config: ${SRCDIR}/cuzk.pc
#include "cuzk_link.h"
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ScalarBytes is the size of a scalar at the ABI; ProofBytes the size of a proof.
const (
	ScalarBytes = int(C.CUZK_SCALAR_BYTES)
	ProofBytes  = int(C.CUZK_PROOF_BYTES)
)

// Status is the library's status code (cuzk_status in cuzk.h).
type Status int

// The status codes; their values are the ABI's.
const (
	StatusOK               Status = C.CUZK_STATUS_OK
	StatusPanic            Status = C.CUZK_STATUS_PANIC
	StatusNullArgument     Status = C.CUZK_STATUS_NULL_ARGUMENT
	StatusBufferTooSmall   Status = C.CUZK_STATUS_BUFFER_TOO_SMALL
	StatusInvalidArgument  Status = C.CUZK_STATUS_INVALID_ARGUMENT
	StatusPoolExhausted    Status = C.CUZK_STATUS_POOL_EXHAUSTED
	StatusAllocation       Status = C.CUZK_STATUS_ALLOCATION
	StatusParamsIO         Status = C.CUZK_STATUS_PARAMS_IO
	StatusParamsTruncated  Status = C.CUZK_STATUS_PARAMS_TRUNCATED
	StatusParamsCorrupt    Status = C.CUZK_STATUS_PARAMS_CORRUPT
	StatusUnsafeParameters Status = C.CUZK_STATUS_UNSAFE_PARAMETERS
	StatusCircuitMismatch  Status = C.CUZK_STATUS_CIRCUIT_MISMATCH
	StatusSynthesis        Status = C.CUZK_STATUS_SYNTHESIS
	StatusMalformedProof   Status = C.CUZK_STATUS_MALFORMED_PROOF
	StatusCuda             Status = C.CUZK_STATUS_CUDA
	StatusDeviceLost       Status = C.CUZK_STATUS_DEVICE_LOST
	StatusNoGPU            Status = C.CUZK_STATUS_NO_GPU
	StatusUnknown          Status = C.CUZK_STATUS_UNKNOWN
	// The engine's (cuzk_engine_*, cuzk_job_*): a cancelled job, a budget that stayed full.
	StatusCancelled       Status = C.CUZK_STATUS_CANCELLED
	StatusBudgetExhausted Status = C.CUZK_STATUS_BUDGET_EXHAUSTED
	// The witness path's: a compiled-circuit file unreadable, of another format version, or
	// corrupt; a witness of another structure; a recording that failed.
	StatusCompiledIO      Status = C.CUZK_STATUS_COMPILED_IO
	StatusCompiledStale   Status = C.CUZK_STATUS_COMPILED_STALE
	StatusCompiledCorrupt Status = C.CUZK_STATUS_COMPILED_CORRUPT
	StatusWitnessMismatch Status = C.CUZK_STATUS_WITNESS_MISMATCH
	StatusRecording       Status = C.CUZK_STATUS_RECORDING
)

var statusNames = map[Status]string{
	StatusOK: "ok", StatusPanic: "panic", StatusNullArgument: "null argument",
	StatusBufferTooSmall: "buffer too small", StatusInvalidArgument: "invalid argument",
	StatusPoolExhausted: "pool exhausted", StatusAllocation: "allocation failed",
	StatusParamsIO: "parameter file I/O", StatusParamsTruncated: "parameters truncated",
	StatusParamsCorrupt: "parameters corrupt", StatusUnsafeParameters: "unsafe parameters",
	StatusCircuitMismatch: "circuit mismatch", StatusSynthesis: "synthesis failed",
	StatusMalformedProof: "malformed proof", StatusCuda: "CUDA error",
	StatusDeviceLost: "GPU lost", StatusNoGPU: "no GPU", StatusUnknown: "unknown error",
	StatusCancelled: "cancelled", StatusBudgetExhausted: "memory budget exhausted",
	StatusCompiledIO: "compiled circuit file I/O", StatusCompiledStale: "compiled circuit file stale",
	StatusCompiledCorrupt: "compiled circuit file corrupt", StatusWitnessMismatch: "witness mismatch",
	StatusRecording: "recording failed",
}

func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status %d", int(s))
}

// Error is a failure the library reported: its status code and message.
type Error struct {
	Status  Status
	Message string
}

// Error reads "cuzk: <status>: <message>", the status said once: the library's messages often
// begin with it already ("invalid argument: ...").
func (e *Error) Error() string {
	status := e.Status.String()
	if strings.HasPrefix(e.Message, status+": ") {
		return "cuzk: " + e.Message
	}
	return fmt.Sprintf("cuzk: %s: %s", status, e.Message)
}

// ErrClosed is returned for a handle used (or closed) after Close, or handed over to the
// library (an assignment after Prove, a buffer after NewRawAssignment).
var ErrClosed = errors.New("cuzk: handle is closed")

// call runs an ABI function taking a trailing `char **err` and converts its result.
func call(f func(err **C.char) C.enum_cuzk_status) error {
	var msg *C.char
	status := f(&msg)
	if status == C.CUZK_STATUS_OK {
		return nil
	}
	e := &Error{Status: Status(status), Message: "(no message)"}
	if msg != nil {
		e.Message = C.GoString(msg)
		C.cuzk_string_free(msg)
	}
	return e
}

// Version is the library's version; ABIVersion its ABI version (must equal HeaderABIVersion).
func Version() string { return C.GoString(C.cuzk_version()) }

// ABIVersion is the ABI version of the linked library.
func ABIVersion() uint32 { return uint32(C.cuzk_abi_version()) }

// HeaderABIVersion is the ABI version of the header this package was built with.
const HeaderABIVersion = uint32(C.CUZK_ABI_VERSION)

// handle is the part every wrapper shares: a C pointer guarded for Close.
type handle struct {
	mu  sync.RWMutex
	ptr unsafe.Pointer
}

// use runs f with the live pointer (readers may overlap), or returns ErrClosed.
func (h *handle) use(f func(p unsafe.Pointer) error) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.ptr == nil {
		return ErrClosed
	}
	return f(h.ptr)
}

// take removes the pointer (for Close or a hand-over); nil if already gone.
func (h *handle) take() unsafe.Pointer {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.ptr
	h.ptr = nil
	return p
}

func closeWith(h *handle, free func(unsafe.Pointer)) error {
	p := h.take()
	if p == nil {
		return ErrClosed
	}
	free(p)
	return nil
}

// --- scalars -------------------------------------------------------------------------

// ScalarFromInt64 is the canonical encoding of a (possibly negative) integer.
func ScalarFromInt64(v int64) []byte {
	out := make([]byte, ScalarBytes)
	C.cuzk_scalar_from_i64(C.int64_t(v), (*C.uint8_t)(unsafe.Pointer(&out[0])))
	return out
}

// flatten joins scalars into one C-ready byte slice, checking each is 32 bytes.
func flatten(what string, scalars [][]byte) ([]byte, error) {
	out := make([]byte, 0, len(scalars)*ScalarBytes)
	for i, s := range scalars {
		if len(s) != ScalarBytes {
			return nil, &Error{StatusInvalidArgument, fmt.Sprintf("%s[%d] has %d bytes; a scalar has %d", what, i, len(s), ScalarBytes)}
		}
		out = append(out, s...)
	}
	return out, nil
}

func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// ToMontgomery converts canonical scalars (a multiple of 32 bytes) into the in-memory form
// raw a/b/c buffers hold, writing to dst (same length; may be src).
func ToMontgomery(dst, src []byte) error {
	if len(src)%ScalarBytes != 0 || len(dst) != len(src) {
		return &Error{StatusInvalidArgument, fmt.Sprintf("ToMontgomery: %d and %d bytes; want equal multiples of 32", len(dst), len(src))}
	}
	return call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_scalars_to_montgomery(bytesPtr(src), C.size_t(len(src)/ScalarBytes), bytesPtr(dst), e)
	})
}

// --- R1CS ----------------------------------------------------------------------------

// Term is one non-zero matrix entry: Coeff (a 32-byte canonical scalar) times Variable in
// row Constraint. Variables: 0 the constant one, 1..numPublic the public inputs, then aux.
type Term struct {
	Constraint uint32
	Variable   uint32
	Coeff      []byte
}

// R1CS is a constraint system: for each row, <A,w>·<B,w> = <C,w>.
type R1CS struct{ h handle }

func cTerms(name string, ts []Term) (unsafe.Pointer, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	size := C.size_t(unsafe.Sizeof(C.struct_cuzk_r1cs_term{}))
	mem := C.malloc(size * C.size_t(len(ts)))
	arr := unsafe.Slice((*C.struct_cuzk_r1cs_term)(mem), len(ts))
	for i, t := range ts {
		if len(t.Coeff) != ScalarBytes {
			C.free(mem)
			return nil, &Error{StatusInvalidArgument, fmt.Sprintf("%s term %d: coefficient has %d bytes", name, i, len(t.Coeff))}
		}
		arr[i].constraint = C.uint32_t(t.Constraint)
		arr[i].variable = C.uint32_t(t.Variable)
		for k := 0; k < ScalarBytes; k++ {
			arr[i].coeff[k] = C.uint8_t(t.Coeff[k])
		}
	}
	return mem, nil
}

// NewR1CS makes a constraint system from the non-zero entries of A, B and C.
func NewR1CS(numPublic, numAux, numConstraints int, a, b, c []Term) (*R1CS, error) {
	if numPublic < 0 || numAux < 0 || numConstraints < 0 {
		return nil, &Error{StatusInvalidArgument, "negative size"}
	}
	var ptrs [3]unsafe.Pointer
	defer func() {
		for _, p := range ptrs {
			if p != nil {
				C.free(p)
			}
		}
	}()
	for i, ts := range [][]Term{a, b, c} {
		p, err := cTerms([]string{"A", "B", "C"}[i], ts)
		if err != nil {
			return nil, err
		}
		ptrs[i] = p
	}
	var out *C.struct_cuzk_r1cs
	err := call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_r1cs_new(C.size_t(numPublic), C.size_t(numAux), C.size_t(numConstraints),
			(*C.struct_cuzk_r1cs_term)(ptrs[0]), C.size_t(len(a)),
			(*C.struct_cuzk_r1cs_term)(ptrs[1]), C.size_t(len(b)),
			(*C.struct_cuzk_r1cs_term)(ptrs[2]), C.size_t(len(c)), &out, e)
	})
	if err != nil {
		return nil, err
	}
	r := &R1CS{handle{ptr: unsafe.Pointer(out)}}
	runtime.SetFinalizer(r, func(r *R1CS) { r.Close() })
	return r, nil
}

// IsSatisfied reports whether the witness satisfies every constraint, and the first row
// that does not (or the number of rows).
func (r *R1CS) IsSatisfied(public, aux [][]byte) (bool, int, error) {
	pub, err := flatten("public", public)
	if err != nil {
		return false, 0, err
	}
	ax, err := flatten("aux", aux)
	if err != nil {
		return false, 0, err
	}
	var ok C.bool
	var first C.size_t
	err = r.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_r1cs_is_satisfied((*C.struct_cuzk_r1cs)(p), bytesPtr(pub), C.size_t(len(public)),
				bytesPtr(ax), C.size_t(len(aux)), &ok, &first, e)
		})
	})
	return bool(ok), int(first), err
}

// Close frees the constraint system; a second Close returns ErrClosed.
func (r *R1CS) Close() error {
	runtime.SetFinalizer(r, nil)
	return closeWith(&r.h, func(p unsafe.Pointer) { C.cuzk_r1cs_free((*C.struct_cuzk_r1cs)(p)) })
}

// --- parameters ------------------------------------------------------------------------

// PointCheck chooses how thoroughly LoadParams checks query points.
type PointCheck int

// Point checks.
const (
	OnCurve  PointCheck = C.CUZK_POINT_CHECK_ON_CURVE
	Subgroup PointCheck = C.CUZK_POINT_CHECK_SUBGROUP
)

// Params are Groth16 parameters.
type Params struct{ h handle }

// ParamsSizes are the sizes parameters expect of a circuit.
type ParamsSizes struct {
	NumInputs, NumAux, DomainSize, HLen, LLen, ALen, BLen, VerifyingKeyBytes, ID uint64
}

func newParams(p *C.struct_cuzk_params) *Params {
	params := &Params{handle{ptr: unsafe.Pointer(p)}}
	runtime.SetFinalizer(params, func(p *Params) { p.Close() })
	return params
}

// LoadParams reads a parameter file in bellperson's format.
func LoadParams(path string, check PointCheck) (*Params, error) {
	if check != OnCurve && check != Subgroup {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("unknown point check %d", int(check))}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.struct_cuzk_params
	if err := call(func(e **C.char) C.enum_cuzk_status {
		return C.cuzk_params_load(cpath, C.cuzk_point_check(check), &out, e)
	}); err != nil {
		return nil, err
	}
	return newParams(out), nil
}

// GenerateInsecureDevelopmentParams runs a Groth16 setup for r with toxic waste derived from
// seed. INSECURE: anyone knowing the seed can forge proofs. For development only.
func GenerateInsecureDevelopmentParams(r *R1CS, seed uint64) (*Params, error) {
	var out *C.struct_cuzk_params
	err := r.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_params_generate_insecure_for_development((*C.struct_cuzk_r1cs)(p), C.uint64_t(seed), &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return newParams(out), nil
}

// Save writes the parameters to path in bellperson's format.
func (p *Params) Save(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_params_save((*C.struct_cuzk_params)(ptr), cpath, e)
		})
	})
}

// Sizes returns what the parameters expect.
func (p *Params) Sizes() (ParamsSizes, error) {
	var s C.struct_cuzk_params_sizes
	err := p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_params_info((*C.struct_cuzk_params)(ptr), &s, e)
		})
	})
	return ParamsSizes{uint64(s.num_inputs), uint64(s.num_aux), uint64(s.domain_size), uint64(s.h_len),
		uint64(s.l_len), uint64(s.a_len), uint64(s.b_len), uint64(s.verifying_key_bytes), uint64(s.id)}, err
}

// VerifyingKey returns the verifying key in bellperson's format (what Verify takes).
func (p *Params) VerifyingKey() ([]byte, error) {
	sizes, err := p.Sizes()
	if err != nil {
		return nil, err
	}
	out := make([]byte, sizes.VerifyingKeyBytes)
	err = p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_params_verifying_key((*C.struct_cuzk_params)(ptr), bytesPtr(out), C.size_t(len(out)), nil, e)
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Close frees the parameters; a second Close returns ErrClosed.
func (p *Params) Close() error {
	runtime.SetFinalizer(p, nil)
	return closeWith(&p.h, func(ptr unsafe.Pointer) { C.cuzk_params_free((*C.struct_cuzk_params)(ptr)) })
}

// --- pool ------------------------------------------------------------------------------

// PoolMemory is the memory a pool hands out.
type PoolMemory int

// Pool memories.
const (
	BestAvailable PoolMemory = C.CUZK_POOL_MEMORY_BEST_AVAILABLE
	Heap          PoolMemory = C.CUZK_POOL_MEMORY_HEAP
)

// PoolConfig configures a pool; DefaultPoolConfig gives the library's defaults.
type PoolConfig struct {
	Memory         PoolMemory
	MaxBytes       uint64 // 0: no cap
	MaxReuseFactor float64
	Wait           time.Duration // 0: fail at once when the cap leaves no room
	AllowFallback  bool
}

// DefaultPoolConfig is the library's default configuration.
func DefaultPoolConfig() PoolConfig {
	c := C.cuzk_pool_config_default()
	return PoolConfig{PoolMemory(c.memory), uint64(c.max_bytes), float64(c.max_reuse_factor),
		time.Duration(c.wait_ms) * time.Millisecond, bool(c.allow_fallback)}
}

// PoolStats is a snapshot of a pool's counters.
type PoolStats struct {
	Checkouts, Allocations, Reuses, Fallbacks, Failures, Waits, Frees uint64
	BytesInUse, BytesIdle, PeakBytes, FallbackBytesInUse, IdleBuffers uint64
	AllocTime, FreeTime                                               time.Duration
}

// Pool is a pool of (pinned) host buffers.
type Pool struct{ h handle }

// NewPool makes a pool.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if cfg.Memory != BestAvailable && cfg.Memory != Heap {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("unknown pool memory %d", int(cfg.Memory))}
	}
	c := C.struct_cuzk_pool_config{
		memory: C.cuzk_pool_memory(cfg.Memory), max_bytes: C.uint64_t(cfg.MaxBytes),
		max_reuse_factor: C.double(cfg.MaxReuseFactor), wait_ms: C.uint64_t(cfg.Wait / time.Millisecond),
		allow_fallback: C.bool(cfg.AllowFallback),
	}
	var out *C.struct_cuzk_pool
	if err := call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_pool_new(&c, &out, e) }); err != nil {
		return nil, err
	}
	p := &Pool{handle{ptr: unsafe.Pointer(out)}}
	runtime.SetFinalizer(p, func(p *Pool) { p.Close() })
	return p, nil
}

// Stats returns the pool's counters.
func (p *Pool) Stats() (PoolStats, error) {
	var s C.struct_cuzk_pool_statistics
	err := p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_pool_stats((*C.struct_cuzk_pool)(ptr), &s, e) })
	})
	return poolStatsFrom(&s), err
}

// poolStatsFrom converts the ABI's pool counters (also part of an engine's statistics).
func poolStatsFrom(s *C.struct_cuzk_pool_statistics) PoolStats {
	return PoolStats{uint64(s.checkouts), uint64(s.allocations), uint64(s.reuses), uint64(s.fallbacks),
		uint64(s.failures), uint64(s.waits), uint64(s.frees), uint64(s.bytes_in_use), uint64(s.bytes_idle),
		uint64(s.peak_bytes), uint64(s.fallback_bytes_in_use), uint64(s.idle_buffers),
		time.Duration(s.alloc_ns), time.Duration(s.free_ns)}
}

// Shrink frees idle buffers until at most target bytes are idle; returns the bytes freed.
func (p *Pool) Shrink(target uint64) (uint64, error) {
	var freed C.size_t
	err := p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_pool_shrink((*C.struct_cuzk_pool)(ptr), C.size_t(target), &freed, e)
		})
	})
	return uint64(freed), err
}

// Buffer is memory checked out of a pool. Its Bytes are C memory, valid until Checkin or
// until it is handed to NewRawAssignment.
type Buffer struct {
	h      handle
	data   unsafe.Pointer
	cap    int
	pinned bool
}

// Checkout checks out a buffer of at least n bytes.
func (p *Pool) Checkout(n int) (*Buffer, error) {
	if n <= 0 {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("checkout of %d bytes", n)}
	}
	var out *C.struct_cuzk_buffer
	var data *C.uint8_t
	var capacity C.size_t
	var pinned C.bool
	err := p.h.use(func(ptr unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_pool_checkout((*C.struct_cuzk_pool)(ptr), C.size_t(n), &out, &data, &capacity, &pinned, e)
		})
	})
	if err != nil {
		return nil, err
	}
	b := &Buffer{handle{ptr: unsafe.Pointer(out)}, unsafe.Pointer(data), int(capacity), bool(pinned)}
	runtime.SetFinalizer(b, func(b *Buffer) { b.Checkin() })
	return b, nil
}

// Bytes is the buffer's memory (its full capacity), or nil once checked in or handed over.
func (b *Buffer) Bytes() []byte {
	b.h.mu.RLock()
	defer b.h.mu.RUnlock()
	if b.h.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.data), b.cap)
}

// Pinned reports whether the buffer is page-locked.
func (b *Buffer) Pinned() bool { return b.pinned }

// Checkin returns the buffer to its pool; a second Checkin returns ErrClosed.
func (b *Buffer) Checkin() error {
	runtime.SetFinalizer(b, nil)
	return closeWith(&b.h, func(p unsafe.Pointer) { C.cuzk_buffer_checkin((*C.struct_cuzk_buffer)(p)) })
}

// Close is Checkin.
func (b *Buffer) Close() error { return b.Checkin() }

// Close frees the pool handle (memory still checked out stays valid); a second Close
// returns ErrClosed.
func (p *Pool) Close() error {
	runtime.SetFinalizer(p, nil)
	return closeWith(&p.h, func(ptr unsafe.Pointer) { C.cuzk_pool_free((*C.struct_cuzk_pool)(ptr)) })
}
