package cuzk

import (
	"bytes"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"
)

// cpuEngine starts an engine on the CPU backend, its pool on the heap, one GPU worker.
func cpuEngine(t *testing.T, mutate func(*EngineConfig)) *Engine {
	t.Helper()
	eng, err := NewEngine(cpuConfig(t, mutate))
	must(t, err)
	t.Cleanup(func() {
		if err := eng.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return eng
}

// cpuConfig is cpuEngine's configuration.
func cpuConfig(t *testing.T, mutate func(*EngineConfig)) EngineConfig {
	t.Helper()
	cfg := DefaultEngineConfig()
	if cfg.Backend != Auto || cfg.Pacer != PacerPI || cfg.BudgetBytes != 0 || cfg.Memory != BestAvailable {
		t.Fatalf("unexpected defaults %+v", cfg)
	}
	cfg.Backend = CPU
	cfg.Memory = Heap
	cfg.SynthesisWorkers = 1
	cfg.BudgetBytes = 1 << 30
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg
}

func enginePool(t *testing.T, eng *Engine) *Pool {
	t.Helper()
	pool, err := eng.Pool()
	must(t, err)
	t.Cleanup(func() { pool.Close() })
	return pool
}

// toyAssignments synthesizes the toy circuit for x = first, first+1, ... in pool.
func toyAssignments(t *testing.T, r1cs *R1CS, pool *Pool, first int64, n int) ([]*Assignment, [][][]byte) {
	t.Helper()
	var as []*Assignment
	var publics [][][]byte
	for i := 0; i < n; i++ {
		public, aux := ToyWitness(first + int64(i))
		a, err := NewR1CSAssignment(r1cs, pool, public, aux)
		must(t, err)
		as = append(as, a)
		publics = append(publics, public)
	}
	return as, publics
}

func TestEngineJobGivesTheProversBytes(t *testing.T) {
	f := setup(t, 42)
	eng := cpuEngine(t, nil)
	pool := enginePool(t, eng)
	const n = 3
	s := ScalarFromInt64
	r, sv := [][]byte{s(11), s(12), s(13)}, [][]byte{s(21), s(22), s(23)}

	as, publics := toyAssignments(t, f.r1cs, pool, 3, n)
	job, err := eng.Submit(f.params, as, r, sv, 0)
	must(t, err)
	defer job.Close()
	for i, a := range as {
		if a.Close() != ErrClosed {
			t.Fatalf("assignment %d is still usable after Submit", i)
		}
	}
	proofs, err := job.Wait()
	must(t, err)
	if len(proofs) != n {
		t.Fatalf("%d proofs for %d partitions", len(proofs), n)
	}
	// The blocking prover's bytes with the same assignments and randomness.
	as2, _ := toyAssignments(t, f.r1cs, f.pool, 3, n)
	expected, _, err := f.prover.Prove(f.params, as2, r, sv)
	must(t, err)
	for i := range proofs {
		if len(proofs[i]) != ProofBytes || !bytes.Equal(proofs[i], expected[i]) {
			t.Fatalf("proof %d differs from Prove's:\nengine %x\nprove  %x", i, proofs[i], expected[i])
		}
		ok, err := Verify(f.vk, proofs[i], publics[i])
		must(t, err)
		if !ok {
			t.Fatalf("proof %d does not verify", i)
		}
	}
	// The first proof of x=3 with r=11, s=21 is not the golden (s=13) one: r and s matter.
	golden, _ := hex.DecodeString(toyGolden)
	if bytes.Equal(proofs[0], golden) {
		t.Fatal("s was ignored")
	}

	p, err := job.Progress()
	must(t, err)
	if p != (JobProgress{Done: n, Total: n, Finished: true}) {
		t.Fatalf("progress after Wait: %+v", p)
	}
	if job.Cancel() {
		t.Fatal("Cancel of a finished job reports it running")
	}
	if _, err := job.Wait(); status(err) != StatusInvalidArgument {
		t.Fatalf("second Wait: %v", err)
	}

	st, err := eng.Stats()
	must(t, err)
	if st.PartitionsDone != n || st.JobsDone != 1 || st.JobsActive != 0 || st.JobsFailed != 0 {
		t.Fatalf("stats: %+v", st)
	}
	if st.BudgetLimit != 1<<30 || st.ParamsSets != 1 || st.ParamsHostBytes == 0 || st.GPUWorkers != 1 ||
		st.GPUEMA <= 0 || st.Uptime <= 0 || st.GPUBusyFraction <= 0 || st.GPUBusyFraction > 1 {
		t.Fatalf("stats: %+v", st)
	}
	if st.Pool.BytesInUse != 0 || st.Pool.Checkouts < 4*n {
		t.Fatalf("the assignments were not made in (or not returned to) the engine's pool: %+v", st.Pool)
	}
}

func TestEngineProgressCallback(t *testing.T) {
	f := setup(t, 5)
	eng := cpuEngine(t, nil)
	pool := enginePool(t, eng)
	const n = 3

	var mu sync.Mutex
	var events []ProgressEvent
	record := func(ev ProgressEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}
	as, publics := toyAssignments(t, f.r1cs, pool, 5, n)
	job, err := eng.Submit(f.params, as, nil, nil, 0)
	must(t, err)
	must(t, job.OnProgress(record))
	proofs, err := job.Wait()
	must(t, err)
	for i := range proofs {
		ok, err := Verify(f.vk, proofs[i], publics[i])
		must(t, err)
		if !ok {
			t.Fatalf("proof %d does not verify", i)
		}
	}
	mu.Lock()
	got := append([]ProgressEvent(nil), events...)
	mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress events")
	}
	last := got[len(got)-1]
	if !last.Finished || last.Done != n || last.Failed != 0 || last.Total != n {
		t.Fatalf("last event %+v", last)
	}
	for i, ev := range got {
		if ev.JobID != last.JobID || ev.Total != n || (ev.Finished && i != len(got)-1) ||
			(i > 0 && ev.Done < got[i-1].Done) {
			t.Fatalf("events %+v", got)
		}
	}
	// Registered after Wait: called once, at once, with the final event.
	var late []ProgressEvent
	must(t, job.OnProgress(func(ev ProgressEvent) { late = append(late, ev) }))
	if len(late) != 1 || late[0] != last {
		t.Fatalf("OnProgress after Wait: %+v, want [%+v]", late, last)
	}
	must(t, job.Close())

	// A failing job (an assignment of another circuit): its last event counts it failed.
	one := ScalarFromInt64(1)
	small, err := NewR1CS(1, 1, 1, []Term{{0, 1, one}}, []Term{{0, 0, one}}, []Term{{0, 2, one}})
	must(t, err)
	defer small.Close()
	other, err := NewR1CSAssignment(small, pool, [][]byte{one}, [][]byte{one})
	must(t, err)
	job, err = eng.Submit(f.params, []*Assignment{other}, nil, nil, 0)
	must(t, err)
	defer job.Close()
	evs := make(chan ProgressEvent, 16)
	must(t, job.OnProgress(func(ev ProgressEvent) { evs <- ev }))
	if _, err := job.Wait(); status(err) != StatusCircuitMismatch {
		t.Fatalf("Wait of a mismatched job: %v", err)
	}
	var lastEv ProgressEvent
	for done := false; !done; {
		select {
		case lastEv = <-evs:
			done = lastEv.Finished
		case <-time.After(10 * time.Second):
			t.Fatal("no final event")
		}
	}
	if lastEv.JobID <= last.JobID || lastEv.Done != 0 || lastEv.Failed != 1 || lastEv.Total != 1 {
		t.Fatalf("final event of the failed job %+v (previous job %d)", lastEv, last.JobID)
	}
	st, err := eng.Stats()
	must(t, err)
	if st.JobsDone != 1 || st.JobsFailed != 1 || st.PartitionsDone != n || st.PartitionsFailed != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// wideCircuit is n constraints x_i · 1 = x_i over n aux variables (and one unconstrained
// public input): big enough that proving it on the CPU takes a while.
func wideCircuit(t *testing.T, n int) (*R1CS, [][]byte, [][]byte) {
	t.Helper()
	one := ScalarFromInt64(1)
	var a, b, c []Term
	aux := make([][]byte, n)
	for i := 0; i < n; i++ {
		v := uint32(2 + i)
		a = append(a, Term{uint32(i), v, one})
		b = append(b, Term{uint32(i), 0, one})
		c = append(c, Term{uint32(i), v, one})
		aux[i] = ScalarFromInt64(int64(i*7919 + 1))
	}
	r, err := NewR1CS(1, n, n, a, b, c)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return r, [][]byte{ScalarFromInt64(99)}, aux
}

// wideSetup is the wide circuit of n constraints, its parameters (closed at the test's end)
// and their verifying key.
func wideSetup(t *testing.T, n int) (wide *R1CS, public, aux [][]byte, params *Params, vk []byte) {
	t.Helper()
	wide, public, aux = wideCircuit(t, n)
	params, err := GenerateInsecureDevelopmentParams(wide, 2)
	must(t, err)
	t.Cleanup(func() { params.Close() })
	vk, err = params.VerifyingKey()
	must(t, err)
	return wide, public, aux, params, vk
}

// wideJob synthesizes n partitions of the wide circuit in pool.
func wideJob(t *testing.T, r *R1CS, pool *Pool, public, aux [][]byte, n int) []*Assignment {
	t.Helper()
	as := make([]*Assignment, n)
	for i := range as {
		a, err := NewR1CSAssignment(r, pool, public, aux)
		must(t, err)
		as[i] = a
	}
	return as
}

// verifyAll checks that each of what's proofs (of one public input) verifies.
func verifyAll(t *testing.T, what string, vk []byte, proofs, public [][]byte) {
	t.Helper()
	for i, proof := range proofs {
		ok, err := Verify(vk, proof, public)
		must(t, err)
		if !ok {
			t.Fatalf("proof %d of %s does not verify", i, what)
		}
	}
}

// waitOnWorker waits until a partition is on the engine's (only) worker.
func waitOnWorker(t *testing.T, eng *Engine) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := eng.Stats()
		must(t, err)
		if st.OnGPU == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partition reached the worker: %+v", st)
		}
	}
}

func TestEngineCancelAJobWaitingBehindALongOne(t *testing.T) {
	f := setup(t, 8)
	wide, public, aux, wideParams, wideVK := wideSetup(t, 1<<12)
	eng := cpuEngine(t, func(c *EngineConfig) { c.Pacer = PacerBoundedQueue; c.PacerDepth = 1 })
	pool := enginePool(t, eng)

	long, err := eng.Submit(wideParams, wideJob(t, wide, pool, public, aux, 3), nil, nil, 0)
	must(t, err)
	defer long.Close()
	// Once the only worker proves the long job's first partition, a later job waits.
	waitOnWorker(t, eng)
	as, _ := toyAssignments(t, f.r1cs, pool, 3, 1)
	short, err := eng.Submit(f.params, as, nil, nil, 0)
	must(t, err)
	defer short.Close()
	if !short.Cancel() {
		t.Fatal("Cancel of a job waiting behind another reports it over")
	}
	if short.Cancel() {
		t.Fatal("a second Cancel reports the job running")
	}
	// Polled before Wait, and again after it: the real counts either way.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		p, err := short.Progress()
		must(t, err)
		if p.Finished {
			if p.Done != 0 || p.Total != 1 {
				t.Fatalf("progress of the cancelled job: %+v", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled job never finished: %+v", p)
		}
	}
	if _, err := short.Wait(); status(err) != StatusCancelled {
		t.Fatalf("Wait of a cancelled job: %v", err)
	}
	if p, err := short.Progress(); err != nil || p.Done != 0 || p.Total != 1 || !p.Finished {
		t.Fatalf("progress of the cancelled job after Wait: %+v, %v", p, err)
	}

	// The long job is not affected.
	proofs, err := long.Wait()
	must(t, err)
	verifyAll(t, "the long job", wideVK, proofs, public)
	st, err := eng.Stats()
	must(t, err)
	if st.JobsDone != 1 || st.JobsFailed != 1 || st.PartitionsDone != 3 || st.PartitionsDropped != 1 {
		t.Fatalf("stats: %+v", st)
	}
	if st.Pool.BytesInUse != 0 {
		t.Fatalf("%d pool bytes in use after the jobs", st.Pool.BytesInUse)
	}

	// Cancel reaches a job another goroutine is blocked in Wait on.
	job, err := eng.Submit(wideParams, wideJob(t, wide, pool, public, aux, 3), nil, nil, 0)
	must(t, err)
	waited := make(chan error, 1)
	go func() { _, err := job.Wait(); waited <- err }()
	time.Sleep(20 * time.Millisecond)
	if !job.Cancel() {
		t.Fatal("Cancel of a job being waited for reports it over")
	}
	if err := <-waited; status(err) != StatusCancelled {
		t.Fatalf("Wait of a job cancelled meanwhile: %v", err)
	}
	must(t, job.Close())

	// Closing a job while another goroutine Waits on it: the Wait returns, the job is freed.
	job, err = eng.Submit(wideParams, wideJob(t, wide, pool, public, aux, 3), nil, nil, 0)
	must(t, err)
	go func() { _, err := job.Wait(); waited <- err }()
	time.Sleep(20 * time.Millisecond)
	must(t, job.Close())
	if err := <-waited; status(err) != StatusCancelled && err != ErrClosed {
		t.Fatalf("Wait of a job closed meanwhile: %v", err)
	}

	// Closing the engine fails the jobs not yet over.
	job, err = eng.Submit(wideParams, wideJob(t, wide, pool, public, aux, 3), nil, nil, 0)
	must(t, err)
	defer job.Close()
	must(t, eng.Close())
	if _, err := job.Wait(); status(err) != StatusCancelled {
		t.Fatalf("Wait of a job whose engine closed: %v", err)
	}
}

func TestEngineClosedHandlesAndBadInput(t *testing.T) {
	f := setup(t, 9)
	for _, bad := range []func(*EngineConfig){
		func(c *EngineConfig) { c.Backend = Backend(7) },
		func(c *EngineConfig) { c.Pacer = PacerMode(9) },
		func(c *EngineConfig) { c.Memory = PoolMemory(3) },
		func(c *EngineConfig) { c.SynthesisWorkers = -1 },
		func(c *EngineConfig) { c.BudgetTimeout = -time.Second },
	} {
		cfg := DefaultEngineConfig()
		bad(&cfg)
		if _, err := NewEngine(cfg); status(err) != StatusInvalidArgument {
			t.Errorf("bad config %+v: %v", cfg, err)
		}
	}

	eng := cpuEngine(t, nil)
	pool := enginePool(t, eng)
	inUse := func() uint64 {
		s, err := pool.Stats()
		must(t, err)
		return s.BytesInUse
	}
	if _, err := eng.Submit(f.params, nil, nil, nil, 0); status(err) != StatusInvalidArgument {
		t.Errorf("empty job: %v", err)
	}
	as, _ := toyAssignments(t, f.r1cs, pool, 3, 2)
	if _, err := eng.Submit(f.params, []*Assignment{as[0], nil, as[1]}, nil, nil, 0); status(err) != StatusNullArgument {
		t.Errorf("nil assignment: %v", err)
	}
	if as[0].Close() != ErrClosed || as[1].Close() != ErrClosed || inUse() != 0 {
		t.Error("a refused job's assignments were not consumed")
	}
	as, _ = toyAssignments(t, f.r1cs, pool, 3, 2)
	if _, err := eng.Submit(f.params, as, [][]byte{ScalarFromInt64(1), ScalarFromInt64(2)}, nil, 0); status(err) != StatusInvalidArgument {
		t.Errorf("r without s: %v", err)
	}
	as, _ = toyAssignments(t, f.r1cs, pool, 3, 1)
	if _, err := eng.Submit(f.params, as, [][]byte{{1}}, [][]byte{{2}}, 0); status(err) != StatusInvalidArgument {
		t.Errorf("short r: %v", err)
	}
	closedParams, err := GenerateInsecureDevelopmentParams(f.r1cs, 1)
	must(t, err)
	must(t, closedParams.Close())
	as, _ = toyAssignments(t, f.r1cs, pool, 3, 1)
	if _, err := eng.Submit(closedParams, as, nil, nil, 0); err != ErrClosed {
		t.Errorf("closed params: %v", err)
	}
	if n := inUse(); n != 0 {
		t.Fatalf("%d pool bytes in use after refused jobs", n)
	}

	// A job over before its engine closes keeps its proofs.
	as, publics := toyAssignments(t, f.r1cs, pool, 4, 2)
	job, err := eng.Submit(f.params, as, nil, nil, 0)
	must(t, err)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		p, err := job.Progress()
		must(t, err)
		if p.Finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job never finished: %+v", p)
		}
	}
	must(t, eng.Close())
	proofs, err := job.Wait()
	must(t, err)
	for i := range proofs {
		ok, err := Verify(f.vk, proofs[i], publics[i])
		must(t, err)
		if !ok {
			t.Fatalf("proof %d does not verify", i)
		}
	}

	// A closed engine.
	if err := eng.Close(); err != ErrClosed {
		t.Errorf("second engine Close: %v", err)
	}
	if _, err := eng.Stats(); err != ErrClosed {
		t.Errorf("Stats of a closed engine: %v", err)
	}
	if _, err := eng.Pool(); err != ErrClosed {
		t.Errorf("Pool of a closed engine: %v", err)
	}
	as, _ = toyAssignments(t, f.r1cs, pool, 3, 1)
	if _, err := eng.Submit(f.params, as, nil, nil, 0); err != ErrClosed {
		t.Errorf("Submit to a closed engine: %v", err)
	}
	if as[0].Close() != ErrClosed || inUse() != 0 {
		t.Error("the assignment of a job refused by a closed engine was not consumed")
	}

	// A closed job.
	must(t, job.Close())
	if err := job.Close(); err != ErrClosed {
		t.Errorf("second job Close: %v", err)
	}
	if _, err := job.Wait(); err != ErrClosed {
		t.Errorf("Wait of a closed job: %v", err)
	}
	if _, err := job.Progress(); err != ErrClosed {
		t.Errorf("Progress of a closed job: %v", err)
	}
	if err := job.OnProgress(func(ProgressEvent) {}); err != ErrClosed {
		t.Errorf("OnProgress of a closed job: %v", err)
	}
	if job.Cancel() {
		t.Error("Cancel of a closed job reports it running")
	}
}
