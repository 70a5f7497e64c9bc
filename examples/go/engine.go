package cuzk

/*
#include <stdint.h>
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"
)

// PacerMode is how an engine paces dispatches to its GPU workers.
type PacerMode int

// Pacer modes.
const (
	// PacerPI: a PI controller keeps PacerDepth synthesized partitions waiting for a GPU.
	PacerPI PacerMode = C.CUZK_PACER_MODE_PI
	// PacerBoundedQueue: at most PacerDepth partitions in synthesis or waiting.
	PacerBoundedQueue PacerMode = C.CUZK_PACER_MODE_BOUNDED_QUEUE
)

// EngineConfig configures an engine (cuzk_engine_config in cuzk.h). Start from
// DefaultEngineConfig; a zero field means "the library's default" where it says so.
type EngineConfig struct {
	// SynthesisWorkers synthesize (0: the host's cores). Jobs submitted from Go arrive
	// synthesized, so these threads are idle unless Rust code shares the engine.
	SynthesisWorkers int
	// GPUWorkersPerBackend is the number of proving threads per backend (0: 1).
	GPUWorkersPerBackend int
	// Backend: GPU proves on GPUs FirstGPU .. FirstGPU+NumGPUs-1.
	Backend Backend
	// FirstGPU is the first GPU (with GPU).
	FirstGPU int
	// NumGPUs is how many GPUs from FirstGPU (with GPU; 0: 1).
	NumGPUs int
	// BudgetBytes is the host memory budget: partitions in flight, parameter sets held and
	// the pool's idle buffers; also the pool's cap (0: half the host's memory).
	BudgetBytes uint64
	// BudgetTimeout is how long a partition waits for room in the budget before its job
	// fails with StatusBudgetExhausted (0: 10 minutes). Millisecond resolution.
	BudgetTimeout time.Duration
	// Pacer is the pacing mode.
	Pacer PacerMode
	// PacerDepth is the PI target depth or the bounded queue's depth (0: 2 for PI, 4 for
	// the queue).
	PacerDepth int
	// Memory is the memory the engine's pool hands out.
	Memory PoolMemory
	// WitnessPathOff synthesizes circuit partitions (the Filecoin calls' jobs) in full, with
	// nothing recorded. Off by default: the witness path (the first partition of a circuit
	// type and shape records its constraints, later ones compute only a compact witness; the
	// same bytes), unless the environment has CUZK_WITNESS_PATH=0.
	WitnessPathOff bool
	// NativeWitnessOff computes every witness-path partition's witness by its circuit's
	// gadgets. Off by default: a Filecoin partition (PoRep C2, SnapDeals, Winning and Window PoSt) has its
	// witness written by cuzk's native generator once it has matched the gadgets on the
	// compiled circuit (the same bytes), unless the environment has CUZK_NATIVE_WITNESS=0.
	NativeWitnessOff bool
	// ParamsOnDevice keeps the parameter sets the Filecoin calls load on the GPUs without
	// their host copy once their first proof uploads them (a 32 GiB PoRep set: ~45 GiB of
	// host memory less). The CPU, or a GPU too small to hold a set, keeps its host copy (with
	// a warning in the log); a lost GPU loses the sets it held. Off by default.
	ParamsOnDevice bool
}

// DefaultEngineConfig is the library's default configuration (cuzk_engine_config_default).
func DefaultEngineConfig() EngineConfig {
	c := C.cuzk_engine_config_default()
	return EngineConfig{
		SynthesisWorkers:     int(c.synthesis_workers),
		GPUWorkersPerBackend: int(c.gpu_workers_per_backend),
		Backend:              Backend(c.backend),
		FirstGPU:             int(c.first_gpu),
		NumGPUs:              int(c.num_gpus),
		BudgetBytes:          uint64(c.budget_bytes),
		BudgetTimeout:        time.Duration(c.budget_timeout_ms) * time.Millisecond,
		Pacer:                PacerMode(c.pacer),
		PacerDepth:           int(c.pacer_depth),
		Memory:               PoolMemory(c.memory),
		WitnessPathOff:       c.witness_path_off != 0,
		NativeWitnessOff:     c.native_witness_off != 0,
		ParamsOnDevice:       c.params_on_device != 0,
	}
}

// cConfig checks cfg (enums must be known values before they cross the ABI) and converts it.
func (cfg EngineConfig) cConfig() (C.struct_cuzk_engine_config, error) {
	var c C.struct_cuzk_engine_config
	bad := func(msg string, args ...interface{}) (C.struct_cuzk_engine_config, error) {
		return c, &Error{StatusInvalidArgument, "engine config: " + fmt.Sprintf(msg, args...)}
	}
	if cfg.Backend != Auto && cfg.Backend != CPU && cfg.Backend != GPU {
		return bad("unknown backend %d", int(cfg.Backend))
	}
	if cfg.Pacer != PacerPI && cfg.Pacer != PacerBoundedQueue {
		return bad("unknown pacer mode %d", int(cfg.Pacer))
	}
	if cfg.Memory != BestAvailable && cfg.Memory != Heap {
		return bad("unknown pool memory %d", int(cfg.Memory))
	}
	u32 := func(name string, v int) (C.uint32_t, error) {
		if v < 0 || uint64(v) > 0xffffffff {
			return 0, &Error{StatusInvalidArgument, fmt.Sprintf("engine config: %s = %d is out of range", name, v)}
		}
		return C.uint32_t(v), nil
	}
	var err error
	for _, f := range []struct {
		name string
		v    int
		dst  *C.uint32_t
	}{
		{"SynthesisWorkers", cfg.SynthesisWorkers, &c.synthesis_workers},
		{"GPUWorkersPerBackend", cfg.GPUWorkersPerBackend, &c.gpu_workers_per_backend},
		{"FirstGPU", cfg.FirstGPU, &c.first_gpu},
		{"NumGPUs", cfg.NumGPUs, &c.num_gpus},
		{"PacerDepth", cfg.PacerDepth, &c.pacer_depth},
	} {
		if *f.dst, err = u32(f.name, f.v); err != nil {
			return c, err
		}
	}
	if cfg.BudgetTimeout < 0 {
		return bad("negative BudgetTimeout")
	}
	ms := cfg.BudgetTimeout / time.Millisecond
	if cfg.BudgetTimeout > 0 && ms == 0 {
		ms = 1 // not "the default"
	}
	c.backend = C.cuzk_backend(cfg.Backend)
	c.budget_bytes = C.uint64_t(cfg.BudgetBytes)
	c.budget_timeout_ms = C.uint64_t(ms)
	c.pacer = C.cuzk_pacer_mode(cfg.Pacer)
	c.memory = C.cuzk_pool_memory(cfg.Memory)
	if cfg.WitnessPathOff {
		c.witness_path_off = 1
	}
	if cfg.NativeWitnessOff {
		c.native_witness_off = 1
	}
	if cfg.ParamsOnDevice {
		c.params_on_device = 1
	}
	return c, nil
}

// Engine is cuzk's proving engine: jobs of synthesized partitions (assignments) from any
// goroutine, proved on its GPU workers under one host memory budget. Safe for concurrent
// use. Close stops it; its jobs outlive it (those not over fail with StatusCancelled).
//
// Each Job and FilecoinJob of the engine holds it until the job is closed, so an engine that
// is no longer referenced but still has unclosed jobs is not collected: dropping the *Engine
// does not cancel its jobs. An engine that is collected without Close is closed by its
// finalizer on a goroutine of its own (finalizeEngine).
type Engine struct{ h handle }

// NewEngine starts an engine (its threads and pool).
func NewEngine(cfg EngineConfig) (*Engine, error) {
	c, err := cfg.cConfig()
	if err != nil {
		return nil, err
	}
	var out *C.struct_cuzk_engine
	if err := call(func(e **C.char) C.enum_cuzk_status { return C.cuzk_engine_new(&c, &out, e) }); err != nil {
		return nil, err
	}
	eng := &Engine{handle{ptr: unsafe.Pointer(out)}}
	runtime.SetFinalizer(eng, finalizeEngine)
	return eng, nil
}

// finalizeEngine closes an engine nobody references (its jobs included: each holds it). Close
// joins the engine's threads, which waits for the proofs under way to finish (seconds to
// minutes); the runtime runs every finalizer of the process on one goroutine, so the close
// runs on a goroutine of its own and the other finalizers are not held up meanwhile.
func finalizeEngine(e *Engine) { go e.Close() }

// Pool is a handle on the engine's own pool: make a job's assignments there
// (NewR1CSAssignment, Checkout for raw ones), so their bytes are the ones the engine's
// budget counts. Close it when done; the pool lives on while the engine or a handle holds it.
func (eng *Engine) Pool() (*Pool, error) {
	var out *C.struct_cuzk_pool
	err := eng.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_engine_pool((*C.struct_cuzk_engine)(p), &out, e)
		})
	})
	if err != nil {
		return nil, err
	}
	pool := &Pool{handle{ptr: unsafe.Pointer(out)}}
	runtime.SetFinalizer(pool, func(p *Pool) { p.Close() })
	return pool, nil
}

// Submit submits a job: one partition per assignment, proved with params, without blocking.
// r and s are both nil (drawn from the OS) or one 32-byte scalar per assignment each (the
// same r, s give Prover.Prove's bytes). A higher priority goes to a GPU first. The
// assignments are consumed whatever the outcome, as by Prove; their bytes count against
// the engine's budget at once.
func (eng *Engine) Submit(params *Params, assignments []*Assignment, r, s [][]byte, priority int32) (*Job, error) {
	ptrs := make([]*C.struct_cuzk_assignment, len(assignments))
	var failed error
	for i, a := range assignments {
		if a == nil {
			if failed == nil {
				failed = &Error{StatusNullArgument, fmt.Sprintf("assignment %d is nil", i)}
			}
			continue
		}
		runtime.SetFinalizer(a, nil)
		if ptr := a.h.take(); ptr != nil {
			ptrs[i] = (*C.struct_cuzk_assignment)(ptr)
		} else if failed == nil {
			failed = fmt.Errorf("assignment %d: %w", i, ErrClosed)
		}
	}
	// submitted: cuzk_engine_submit ran and took the assignments.
	submitted := false
	defer func() {
		if !submitted {
			for _, ptr := range ptrs {
				if ptr != nil {
					C.cuzk_assignment_free(ptr)
				}
			}
		}
	}()
	if failed != nil {
		return nil, failed
	}
	if len(assignments) == 0 {
		return nil, &Error{StatusInvalidArgument, "an empty job: nothing to prove"}
	}
	if (r == nil) != (s == nil) || (r != nil && (len(r) != len(assignments) || len(s) != len(assignments))) {
		return nil, &Error{StatusInvalidArgument, fmt.Sprintf("r and s: both nil or %d each", len(assignments))}
	}
	rb, err := flatten("r", r)
	if err != nil {
		return nil, err
	}
	sb, err := flatten("s", s)
	if err != nil {
		return nil, err
	}
	if params == nil {
		return nil, &Error{StatusNullArgument, "params is nil"}
	}
	var out *C.struct_cuzk_job
	err = eng.h.use(func(ep unsafe.Pointer) error {
		return params.h.use(func(pp unsafe.Pointer) error {
			submitted = true
			return call(func(e **C.char) C.enum_cuzk_status {
				return C.cuzk_engine_submit((*C.struct_cuzk_engine)(ep), (*C.struct_cuzk_params)(pp), &ptrs[0],
					C.size_t(len(ptrs)), bytesPtr(rb), bytesPtr(sb), C.int32_t(priority), &out, e)
			})
		})
	})
	if err != nil {
		return nil, err
	}
	core, err := newJobCore(engineJobKind, unsafe.Pointer(out), eng)
	if err != nil {
		return nil, err
	}
	return &Job{core, len(assignments)}, nil
}

// EngineStats is a snapshot of an engine (cuzk_engine_statistics in cuzk.h); durations are
// zero until known.
type EngineStats struct {
	// Partitions submitted and not yet dispatched; in synthesis; synthesized and waiting for
	// a GPU worker; being proved.
	Pending, InSynthesis, Waiting, OnGPU uint64
	// Jobs not yet over; whose proofs all came back; that failed or were cancelled.
	JobsActive, JobsDone, JobsFailed uint64
	// Partitions proved; whose own synthesis or proof failed; dropped unproved because their
	// job failed or was cancelled.
	PartitionsDone, PartitionsFailed, PartitionsDropped uint64
	// Budget bytes reserved now, at most at once, and the budget.
	BudgetUsed, BudgetPeak, BudgetLimit uint64
	// Of BudgetUsed: bytes reserved for circuits synthesizing.
	SynthesisReserved uint64
	// Parameter sets held, their host bytes (in BudgetUsed), their device bytes (an upper
	// bound).
	ParamsSets, ParamsHostBytes, ParamsDeviceBytes uint64
	// Dispatches that waited for room in the budget.
	BudgetWaits uint64
	// Idle pool bytes freed, parameter sets evicted and the host bytes they freed, under
	// budget pressure.
	EvictedPoolBytes, EvictedParams, EvictedParamsHostBytes uint64
	// Moving averages of a partition's synthesis and proving times.
	SynthesisEMA, GPUEMA time.Duration
	// GPU workers, and those whose backend is lost.
	GPUWorkers, GPUWorkersLost int
	// Mean fraction of the engine's lifetime the GPU workers spent proving.
	GPUBusyFraction float64
	// Dispatches per second the pacer aims at (0: not pacing by rate), its target depth, the
	// most partitions in synthesis and waiting together.
	PacerDispatchRate                  float64
	PacerTargetDepth, PacerInFlightCap uint64
	// Time since the engine started.
	Uptime time.Duration
	// The engine's pool.
	Pool PoolStats
	// Circuit partitions synthesized witness-only and in full (the recording ones included);
	// compiled circuits recorded; witnesses refused (each failed its job with
	// StatusWitnessMismatch, its type and shape synthesized in full from then on); the compiled
	// circuits' bytes (in BudgetUsed).
	WitnessPartitions, FullPartitions, CompiledRecorded, WitnessFallbacks, CompiledBytes uint64
}

// Stats returns a snapshot of the engine's queues, budget, pacer, GPU workers and pool.
func (eng *Engine) Stats() (EngineStats, error) {
	var s C.struct_cuzk_engine_statistics
	err := eng.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_engine_stats((*C.struct_cuzk_engine)(p), &s, e)
		})
	})
	if err != nil {
		return EngineStats{}, err
	}
	u := func(v C.uint64_t) uint64 { return uint64(v) }
	d := func(v C.uint64_t) time.Duration { return time.Duration(v) }
	return EngineStats{
		Pending: u(s.pending), InSynthesis: u(s.in_synthesis), Waiting: u(s.waiting), OnGPU: u(s.on_gpu),
		JobsActive: u(s.jobs_active), JobsDone: u(s.jobs_done), JobsFailed: u(s.jobs_failed),
		PartitionsDone: u(s.partitions_done), PartitionsFailed: u(s.partitions_failed),
		PartitionsDropped: u(s.partitions_dropped),
		BudgetUsed:        u(s.budget_used), BudgetPeak: u(s.budget_peak), BudgetLimit: u(s.budget_limit),
		SynthesisReserved: u(s.synthesis_reserved),
		ParamsSets:        u(s.params_sets), ParamsHostBytes: u(s.params_host_bytes),
		ParamsDeviceBytes: u(s.params_device_bytes),
		BudgetWaits:       u(s.budget_waits),
		EvictedPoolBytes:  u(s.evicted_pool_bytes), EvictedParams: u(s.evicted_params),
		EvictedParamsHostBytes: u(s.evicted_params_host_bytes),
		SynthesisEMA:           d(s.synthesis_ema_ns), GPUEMA: d(s.gpu_ema_ns),
		GPUWorkers: int(s.gpu_workers), GPUWorkersLost: int(s.gpu_workers_lost),
		GPUBusyFraction:   float64(s.gpu_busy_fraction),
		PacerDispatchRate: float64(s.pacer_dispatch_rate),
		PacerTargetDepth:  u(s.pacer_target_depth), PacerInFlightCap: u(s.pacer_in_flight_cap),
		Uptime:            d(s.uptime_ns),
		Pool:              poolStatsFrom(&s.pool),
		WitnessPartitions: u(s.witness_partitions), FullPartitions: u(s.full_partitions),
		CompiledRecorded: u(s.compiled_recorded), WitnessFallbacks: u(s.witness_fallbacks),
		CompiledBytes: u(s.compiled_bytes),
	}, nil
}

// Close stops the engine: jobs not yet over fail with StatusCancelled (their Wait says so),
// proofs under way finish, its threads are joined. It waits for Submit, Stats and Pool calls
// under way. A second Close returns ErrClosed.
//
// With jobs in flight: Close blocks until the partitions on a GPU worker are proved (their
// proofs are dropped) and cancels the rest; each job is then over, its Wait returns
// StatusCancelled (a job whose proofs all came back before gives them), its Progress and
// OnProgress still work, and it must still be closed. A FilecoinJob of the engine is the
// same.
func (eng *Engine) Close() error {
	runtime.SetFinalizer(eng, nil)
	return closeWith(&eng.h, func(p unsafe.Pointer) { C.cuzk_engine_free((*C.struct_cuzk_engine)(p)) })
}

// Job is a job submitted to an Engine. Safe for concurrent use: Cancel, Progress and Close
// may be called while other goroutines Wait. Close it when done (it cancels a job not yet
// over). Until then it holds its engine (the engine is not collected while the job is
// referenced). Its Cancel, Progress, OnProgress and Close are a FilecoinJob's (job.go).
//
// Wait blocks on the binding's own progress callback until the job is over and only then
// takes the result (cuzk_job_wait, which returns at once then), so that Close can interrupt a
// Wait (the library's cuzk_job_free must not run while another thread is inside
// cuzk_job_wait).
type Job struct {
	*jobCore
	total int
}

// Wait blocks until the job is over and returns its proofs (192 bytes each, in the order
// submitted), or why it failed (*Error: its partition's failure, StatusCancelled,
// StatusBudgetExhausted, ...). The result can be taken once: a second Wait returns
// StatusInvalidArgument; a Wait the job's Close interrupts returns ErrClosed.
func (j *Job) Wait() ([][]byte, error) {
	if j.h.use(func(unsafe.Pointer) error { return nil }) != nil {
		return nil, ErrClosed
	}
	<-j.sink.over
	out := make([]byte, j.total*ProofBytes)
	err := j.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status {
			return C.cuzk_job_wait((*C.struct_cuzk_job)(p), bytesPtr(out), C.size_t(len(out)), e)
		})
	})
	if err != nil {
		return nil, err
	}
	proofs := make([][]byte, j.total)
	for i := range proofs {
		proofs[i] = out[i*ProofBytes : (i+1)*ProofBytes : (i+1)*ProofBytes]
	}
	return proofs, nil
}
