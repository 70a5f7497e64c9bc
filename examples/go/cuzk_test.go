package cuzk

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// toyGolden is the toy proof for x = 3, dev parameters from seed 42, r = 11, s = 13: the
// bytes the Rust side pins in tests/ffi.rs (toy_proof_bytes_are_pinned).
const toyGolden = "84af86e7e877f02092e1cf5ea44d9f7f53219db213cb0e11f6aaa5e417a23bd8bf27ef407d3a6dbdd4bbecb272a2bd7cb7471c639d6387435c7853bc40d196e11f774e308bc22abc53c81a1a84b77ced25020f1847423eebbc1f81695d23ca6c12ee33238479d4870f4733c34182f447584c9bfe079e07c5bc4c64fa868e36bb7bceca2b687919faa5985806fc35920db556602de14c1f8dd5995f814be2d78a0a3df75970e31df4f7aac655e78c8b74fcff2c6934297bf81866d6e44a6ab2bf"

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	r1cs   *R1CS
	params *Params
	pool   *Pool
	prover *Prover
	vk     []byte
}

func setup(t *testing.T, seed uint64) *fixture {
	t.Helper()
	r1cs, err := Toy()
	must(t, err)
	params, err := GenerateInsecureDevelopmentParams(r1cs, seed)
	must(t, err)
	cfg := DefaultPoolConfig()
	cfg.Memory = BestAvailable
	pool, err := NewPool(cfg)
	must(t, err)
	prover, err := NewProver(Auto, 0, pool)
	must(t, err)
	vk, err := params.VerifyingKey()
	must(t, err)
	f := &fixture{r1cs, params, pool, prover, vk}
	t.Cleanup(func() {
		for _, c := range []interface{ Close() error }{f.prover, f.pool, f.params, f.r1cs} {
			if err := c.Close(); err != nil && !errors.Is(err, ErrClosed) {
				t.Error(err)
			}
		}
	})
	return f
}

func (f *fixture) bytesInUse(t *testing.T) uint64 {
	s, err := f.pool.Stats()
	must(t, err)
	return s.BytesInUse
}

func TestVersion(t *testing.T) {
	if ABIVersion() != HeaderABIVersion || Version() == "" {
		t.Fatalf("ABI %d, header %d, version %q", ABIVersion(), HeaderABIVersion, Version())
	}
}

func TestToyCircuitProvesAndVerifies(t *testing.T) {
	f := setup(t, 1234)
	t.Logf("backend %s", f.prover.BackendName())
	public, aux := ToyWitness(3)
	ok, first, err := f.r1cs.IsSatisfied(public, aux)
	must(t, err)
	if !ok || first != 3 {
		t.Fatalf("witness not satisfied (row %d)", first)
	}
	a, err := NewR1CSAssignment(f.r1cs, f.pool, public, aux)
	must(t, err)
	proofs, timings, err := f.prover.Prove(f.params, []*Assignment{a}, nil, nil)
	must(t, err)
	if len(proofs) != 1 || len(proofs[0]) != ProofBytes || timings.Total <= 0 {
		t.Fatalf("%d proofs, timings %+v", len(proofs), timings)
	}
	valid, err := Verify(f.vk, proofs[0], public)
	must(t, err)
	if !valid {
		t.Fatal("the proof does not verify")
	}
	wrong, _ := ToyWitness(4)
	valid, err = Verify(f.vk, proofs[0], wrong)
	must(t, err)
	if valid {
		t.Fatal("a wrong y verifies")
	}
	if n := f.bytesInUse(t); n != 0 {
		t.Fatalf("%d pool bytes in use after proving", n)
	}
}

// filled checks out a buffer holding the given canonical scalars in Montgomery form.
func filled(t *testing.T, pool *Pool, scalars [][]byte) *Buffer {
	t.Helper()
	b, err := pool.Checkout(len(scalars) * ScalarBytes)
	must(t, err)
	mem := b.Bytes()[:len(scalars)*ScalarBytes]
	for i, s := range scalars {
		copy(mem[i*ScalarBytes:], s)
	}
	must(t, ToMontgomery(mem, mem))
	return b
}

func TestRawAssignmentGivesTheRustBytes(t *testing.T) {
	f := setup(t, 42)
	s := ScalarFromInt64
	r, sv := [][]byte{s(11)}, [][]byte{s(13)}
	public, aux := ToyWitness(3)
	// The R1CS route.
	a1, err := NewR1CSAssignment(f.r1cs, f.pool, public, aux)
	must(t, err)
	viaR1CS, _, err := f.prover.Prove(f.params, []*Assignment{a1}, r, sv)
	must(t, err)
	// The raw route: rows x·x = x², x²·x = x³, (x³+x+5)·1 = y, then the input rows (1, y).
	raw := RawAssignment{
		A:              filled(t, f.pool, [][]byte{s(3), s(9), s(35), s(1), s(35)}),
		B:              filled(t, f.pool, [][]byte{s(3), s(3), s(1), s(0), s(0)}),
		C:              filled(t, f.pool, [][]byte{s(9), s(27), s(35), s(0), s(0)}),
		NumConstraints: 5,
		Public:         public,
		Aux:            aux,
		AAuxDensity:    []uint64{0b111},
		BInputDensity:  []uint64{0b01},
		BAuxDensity:    []uint64{0b001},
	}
	a2, err := NewRawAssignment(raw)
	must(t, err)
	if raw.A.Bytes() != nil || raw.A.Checkin() != ErrClosed {
		t.Fatal("a buffer handed to the assignment is still usable")
	}
	viaRaw, _, err := f.prover.Prove(f.params, []*Assignment{a2}, r, sv)
	must(t, err)
	golden, _ := hex.DecodeString(toyGolden)
	if !bytes.Equal(viaR1CS[0], golden) || !bytes.Equal(viaRaw[0], golden) {
		t.Fatalf("proof bytes differ from the Rust path's:\nrust %x\nr1cs %x\nraw  %x", golden, viaR1CS[0], viaRaw[0])
	}
	if n := f.bytesInUse(t); n != 0 {
		t.Fatalf("%d pool bytes in use after proving", n)
	}
}

func TestEightGoroutinesProveAtOnce(t *testing.T) {
	f := setup(t, 7)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 3; round++ {
				public, aux := ToyWitness(int64(g*10 + round + 2))
				a, err := NewR1CSAssignment(f.r1cs, f.pool, public, aux)
				if err != nil {
					errs <- err
					return
				}
				proofs, _, err := f.prover.Prove(f.params, []*Assignment{a}, nil, nil)
				if err != nil {
					errs <- err
					return
				}
				ok, err := Verify(f.vk, proofs[0], public)
				if err != nil || !ok {
					errs <- errors.New("a concurrent proof does not verify")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.bytesInUse(t); n != 0 {
		t.Fatalf("%d pool bytes in use after proving", n)
	}
}

func status(err error) Status {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return -1
}

func TestBadInputIsAnErrorNotACrash(t *testing.T) {
	f := setup(t, 3)
	public, aux := ToyWitness(3)

	// nil and short slices.
	if _, err := NewR1CSAssignment(f.r1cs, nil, nil, aux); status(err) != StatusInvalidArgument {
		t.Errorf("nil public inputs: %v", err)
	}
	if _, err := NewR1CSAssignment(f.r1cs, nil, [][]byte{public[0][:31]}, aux); status(err) != StatusInvalidArgument {
		t.Errorf("short scalar: %v", err)
	}
	if _, err := NewR1CSAssignment(f.r1cs, nil, [][]byte{nil}, aux); status(err) != StatusInvalidArgument {
		t.Errorf("nil scalar: %v", err)
	}
	if _, err := Verify(f.vk, nil, public); status(err) != StatusMalformedProof {
		t.Errorf("nil proof: %v", err)
	}
	if _, err := Verify(nil, make([]byte, ProofBytes), public); status(err) == StatusOK {
		t.Errorf("nil verifying key: %v", err)
	}
	if err := ToMontgomery(make([]byte, 31), make([]byte, 31)); status(err) != StatusInvalidArgument {
		t.Errorf("31-byte scalar: %v", err)
	}
	if _, _, err := f.prover.Prove(f.params, nil, nil, nil); status(err) != StatusInvalidArgument {
		t.Errorf("empty batch: %v", err)
	}
	if _, _, err := f.prover.Prove(f.params, []*Assignment{nil}, nil, nil); status(err) != StatusNullArgument {
		t.Errorf("nil assignment: %v", err)
	}
	if _, err := NewR1CS(1, 1, 1, []Term{{0, 9, ScalarFromInt64(1)}}, nil, nil); status(err) != StatusInvalidArgument {
		t.Errorf("term on a missing variable: %v", err)
	}

	// Wrong number of public inputs.
	a, err := NewR1CSAssignment(f.r1cs, nil, public, aux)
	must(t, err)
	proofs, _, err := f.prover.Prove(f.params, []*Assignment{a}, nil, nil)
	must(t, err)
	if _, err := Verify(f.vk, proofs[0], append(public, public[0])); status(err) != StatusInvalidArgument {
		t.Errorf("two public inputs for one: %v", err)
	}
	if _, err := Verify(f.vk, proofs[0], nil); status(err) != StatusInvalidArgument {
		t.Errorf("no public inputs: %v", err)
	}
	// A proved assignment is consumed.
	if err := a.Close(); err != ErrClosed {
		t.Errorf("Close after Prove: %v", err)
	}
	// An assignment of another circuit: a mismatch.
	one := ScalarFromInt64(1)
	small, err := NewR1CS(1, 1, 1, []Term{{0, 1, one}}, []Term{{0, 0, one}}, []Term{{0, 2, one}})
	must(t, err)
	defer small.Close()
	other, err := NewR1CSAssignment(small, nil, [][]byte{one}, [][]byte{one})
	must(t, err)
	if _, _, err := f.prover.Prove(f.params, []*Assignment{other}, nil, nil); status(err) != StatusCircuitMismatch {
		t.Errorf("other circuit: %v", err)
	}

	// A corrupted parameter file, a truncated one, a missing one.
	dir := t.TempDir()
	path := filepath.Join(dir, "toy.params")
	must(t, f.params.Save(path))
	good, err := LoadParams(path, Subgroup)
	must(t, err)
	must(t, good.Close())
	data, err := os.ReadFile(path)
	must(t, err)
	corrupt := append([]byte(nil), data...)
	corrupt[20] ^= 0x55
	must(t, os.WriteFile(path, corrupt, 0o644))
	if _, err := LoadParams(path, OnCurve); status(err) != StatusParamsCorrupt {
		t.Errorf("corrupted file: %v", err)
	}
	must(t, os.WriteFile(path, data[:len(data)-7], 0o644))
	if _, err := LoadParams(path, OnCurve); status(err) != StatusParamsTruncated {
		t.Errorf("truncated file: %v", err)
	}
	if _, err := LoadParams(filepath.Join(dir, "missing"), OnCurve); status(err) != StatusParamsIO {
		t.Errorf("missing file: %v", err)
	}

	// Use after Close, double Close.
	p2, err := GenerateInsecureDevelopmentParams(f.r1cs, 9)
	must(t, err)
	must(t, p2.Close())
	if err := p2.Close(); err != ErrClosed {
		t.Errorf("double Close: %v", err)
	}
	if _, err := p2.VerifyingKey(); err != ErrClosed {
		t.Errorf("use after Close: %v", err)
	}
	a3, err := NewR1CSAssignment(f.r1cs, f.pool, public, aux)
	must(t, err)
	if _, _, err := f.prover.Prove(p2, []*Assignment{a3}, nil, nil); err != ErrClosed {
		t.Errorf("prove with closed params: %v", err)
	}
	pr, err := NewProver(CPU, 0, nil)
	must(t, err)
	must(t, pr.Close())
	if err := pr.Close(); err != ErrClosed {
		t.Errorf("double Close: %v", err)
	}
	if pr.BackendName() != "" {
		t.Error("closed prover has a backend")
	}
	b, err := f.pool.Checkout(100)
	must(t, err)
	must(t, b.Checkin())
	if b.Checkin() != ErrClosed || b.Bytes() != nil {
		t.Error("double Checkin")
	}
	if _, err := f.pool.Checkout(0); status(err) != StatusInvalidArgument {
		t.Errorf("checkout of 0 bytes: %v", err)
	}
	if n := f.bytesInUse(t); n != 0 {
		t.Fatalf("%d pool bytes in use", n)
	}
	if _, err := NewProver(Backend(99), 0, nil); status(err) != StatusInvalidArgument {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := LoadParams(path, PointCheck(7)); status(err) != StatusInvalidArgument {
		t.Errorf("unknown point check: %v", err)
	}
	if _, err := NewPool(PoolConfig{Memory: PoolMemory(5), MaxReuseFactor: 2}); status(err) != StatusInvalidArgument {
		t.Errorf("unknown pool memory: %v", err)
	}
}

func TestLogRecordsReachTheLogger(t *testing.T) {
	var mu sync.Mutex
	var got []string
	must(t, SetLogger(func(level LogLevel, target, message string) {
		mu.Lock()
		defer mu.Unlock()
		if level == LogWarn {
			got = append(got, target+": "+message)
		}
	}, LogWarn))
	r, err := Toy()
	must(t, err)
	defer r.Close()
	p, err := GenerateInsecureDevelopmentParams(r, 5)
	must(t, err)
	must(t, p.Close())
	must(t, SetLogger(nil, LogOff))
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, m := range got {
		if bytes.Contains([]byte(m), []byte("INSECURE")) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning about insecure parameters in %q", got)
	}
}

func TestErrorSaysItsStatusOnce(t *testing.T) {
	repeated := &Error{StatusInvalidArgument, StatusInvalidArgument.String() + ": this sector size has no parameters"}
	if got, want := repeated.Error(), "cuzk: "+StatusInvalidArgument.String()+": this sector size has no parameters"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	plain := &Error{StatusInvalidArgument, "ToMontgomery: 3 and 4 bytes"}
	if got, want := plain.Error(), "cuzk: "+StatusInvalidArgument.String()+": ToMontgomery: 3 and 4 bytes"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}
