package cuzk

import (
	"runtime"
	"testing"
	"time"
)

// watchFinalizer replaces eng's finalizer with one that closes the returned channel, then
// finalizes the engine as the package does.
func watchFinalizer(eng *Engine) <-chan struct{} {
	finalized := make(chan struct{})
	runtime.SetFinalizer(eng, nil)
	runtime.SetFinalizer(eng, func(e *Engine) {
		close(finalized)
		finalizeEngine(e)
	})
	return finalized
}

// collect runs the garbage collector (and so the finalizers of what it finds) a few times.
func collect() {
	for i := 0; i < 4; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// expectKeptThenFreed checks that the engine whose finalizer watchFinalizer watches, no longer
// referenced but by job, is not finalized while job is held (wait, which waits for the job,
// then succeeds), then that it is once the job is closed.
func expectKeptThenFreed(t *testing.T, finalized <-chan struct{}, job interface{ Close() error }, wait func()) {
	t.Helper()
	collect()
	wait()
	select {
	case <-finalized:
		t.Fatal("the engine was finalized while its job was held")
	default:
	}
	must(t, job.Close())
	// The closed job no longer holds the engine (the caller still holds the job).
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		select {
		case <-finalized:
			runtime.KeepAlive(job)
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the engine of a closed job was never finalized")
		}
	}
}

// A job holds its engine: an engine no longer referenced is not finalized (closed, its job
// cancelled) while the job is, and the job's Wait gives its proofs.
func TestAJobKeepsItsEngine(t *testing.T) {
	wide, public, aux, params, vk := wideSetup(t, 1<<12)
	// Not cpuEngine: its cleanup would hold the engine.
	eng, err := NewEngine(cpuConfig(t, nil))
	must(t, err)
	finalized := watchFinalizer(eng)
	pool, err := eng.Pool()
	must(t, err)
	defer pool.Close()
	job, err := eng.Submit(params, wideJob(t, wide, pool, public, aux, 3), nil, nil, 0)
	must(t, err)
	eng = nil
	expectKeptThenFreed(t, finalized, job, func() {
		proofs, err := job.Wait()
		must(t, err)
		verifyAll(t, "the job", vk, proofs, public)
	})
}

// An engine's finalizer closes it off the runtime's finalizer goroutine: while the engine's
// Close waits for the partition its worker proves, other objects' finalizers still run.
func TestEngineFinalizerDoesNotHoldOtherFinalizers(t *testing.T) {
	wide, public, aux, params, _ := wideSetup(t, 1<<13)
	eng, err := NewEngine(cpuConfig(t, func(c *EngineConfig) { c.Pacer = PacerBoundedQueue; c.PacerDepth = 1 }))
	must(t, err)
	finalized := watchFinalizer(eng)
	pool, err := eng.Pool()
	must(t, err)
	defer pool.Close()
	inUse := func() uint64 {
		st, err := pool.Stats()
		if err != nil {
			panic(err)
		}
		return st.BytesInUse
	}
	job, err := eng.Submit(params, wideJob(t, wide, pool, public, aux, 2), nil, nil, 0)
	must(t, err)
	waitOnWorker(t, eng)
	if p, err := job.Progress(); err != nil || p.Total != 2 || p.Finished {
		t.Fatalf("progress of the job on the worker: %+v, %v", p, err)
	}
	// Both abandoned: the job's finalizer closes it (cancelling the partition not yet on the
	// worker), the engine's closes the engine, whose Close waits for the partition on it.
	job, eng = nil, nil
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		select {
		case <-finalized:
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the abandoned engine was never finalized")
			}
			continue
		}
		break
	}
	if inUse() == 0 {
		t.Fatal("the partition was proved before the engine was finalized: the test proves nothing")
	}
	// Queued after the engine's finalizer began: it runs while the partition is still proved
	// (its bytes still in use), not only once the engine's Close returned.
	probe := new([128]byte)
	ran := make(chan uint64, 1)
	runtime.SetFinalizer(probe, func(*[128]byte) { ran <- inUse() })
	probe = nil
	runtime.GC()
	select {
	case bytes := <-ran:
		if bytes == 0 {
			t.Fatal("an object's finalizer ran only once the engine's Close returned")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("an object's finalizer never ran")
	}
	for deadline := time.Now().Add(60 * time.Second); inUse() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the partition's bytes were never freed")
		}
	}
}

// A FilecoinJob holds its engine (a Submit… method's receiver) as a Job does.
func TestFilecoinJobKeepsItsEngine(t *testing.T) {
	f, randomness, vanilla := loadWinningFixture(t)
	eng, err := NewEngine(cpuConfig(t, nil))
	must(t, err)
	finalized := watchFinalizer(eng)
	job, err := eng.SubmitWinningPoStWithVanilla(PriorityDefault, f.ProofType, f.Miner, randomness, vanilla)
	must(t, err)
	eng = nil
	expectKeptThenFreed(t, finalized, job, func() {
		b, err := job.Wait()
		must(t, err)
		if len(b) != ProofBytes {
			t.Fatalf("Winning PoSt: %d bytes", len(b))
		}
	})
}
