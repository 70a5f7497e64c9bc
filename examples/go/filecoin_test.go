package cuzk

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestProverIDIsTheIDAddressPayload(t *testing.T) {
	// f01000: 1000 = 0b111_1101000, LEB128 e8 07, zero-padded to 32 bytes.
	id := ProverID(1000)
	want := make([]byte, 32)
	want[0], want[1] = 0xe8, 0x07
	if !bytes.Equal(id[:], want) {
		t.Fatalf("ProverID(1000) = %x", id)
	}
	if id := ProverID(0); id != [32]byte{} {
		t.Fatalf("ProverID(0) = %x", id)
	}
}

func TestFilecoinWithoutTheFeatureIsUnsupported(t *testing.T) {
	if FilecoinAvailable() {
		t.Skip("the library was built with the filecoin feature")
	}
	_, err := SealCommitPhase2([]byte("{}"), 1, 1000)
	if status(err) != StatusUnsupported {
		t.Fatalf("SealCommitPhase2 without the feature: %v", err)
	}
	_, err = GenerateWinningPoStWithVanilla(0, 1000, make([]byte, 32), [][]byte{{1}})
	if status(err) != StatusUnsupported {
		t.Fatalf("GenerateWinningPoStWithVanilla without the feature: %v", err)
	}
	c := make([]byte, 32)
	_, err = GenerateUpdateProofWithVanilla(0, sealedCID(c), sealedCID(c), unsealedCID(c), [][]byte{{1}})
	if status(err) != StatusUnsupported {
		t.Fatalf("GenerateUpdateProofWithVanilla without the feature: %v", err)
	}
	job, err := SubmitWinningPoStWithVanilla(PriorityDefault, 0, 1000, make([]byte, 32), [][]byte{{1}})
	if status(err) != StatusUnsupported || job != nil {
		t.Fatalf("SubmitWinningPoStWithVanilla without the feature: %v", err)
	}
	if err := ConfigureFilecoin(DefaultEngineConfig()); status(err) != StatusUnsupported {
		t.Fatalf("ConfigureFilecoin without the feature: %v", err)
	}
}

func TestFilecoinBadInputIsAnError(t *testing.T) {
	if !FilecoinAvailable() {
		t.Skip("the library was built without the filecoin feature")
	}
	if _, err := SealCommitPhase2([]byte("not json"), 1, 1000); status(err) != StatusInvalidArgument {
		t.Fatalf("garbage commit phase 1 output: %v", err)
	}
	if _, err := SealCommitPhase2(nil, 1, 1000); status(err) != StatusInvalidArgument {
		t.Fatalf("empty commit phase 1 output: %v", err)
	}
	// A Window proof type for Winning, a short randomness, an unknown proof type.
	if _, err := GenerateWinningPoStWithVanilla(5, 1000, make([]byte, 32), [][]byte{{1}}); status(err) != StatusInvalidArgument {
		t.Fatalf("window type for winning: %v", err)
	}
	if _, err := GenerateWindowPoStWithVanilla(5, 1000, make([]byte, 31), [][]byte{{1}}); status(err) != StatusInvalidArgument {
		t.Fatalf("short randomness: %v", err)
	}
	if _, err := GenerateWindowPoStWithVanilla(99, 1000, make([]byte, 32), [][]byte{{1}}); status(err) != StatusInvalidArgument {
		t.Fatalf("unknown proof type: %v", err)
	}
	c := make([]byte, 32)
	if _, err := GenerateUpdateProofWithCommitments(0, c, c, c[:5], nil); status(err) != StatusInvalidArgument {
		t.Fatalf("short commitment: %v", err)
	}
	// A partition index past the 10 partitions of 2349 sectors one 32 GiB Window PoSt holds:
	// refused first, for what it is (the vanilla proof is garbage too).
	_, err := GenerateSinglePartitionWindowPoStWithVanilla(RegisteredPoStProof_StackedDrgWindow32GiBV1_1, 1000,
		make([]byte, 32), [][]byte{{1}}, 2999)
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument ||
		!strings.Contains(e.Message, "partition index 2999") || !strings.Contains(e.Message, "at most 10 partitions") {
		t.Fatalf("partition index 2999 of a 32 GiB Window PoSt: %v", err)
	}
}

// winningFixture is what the Rust test (tests/filecoin.rs) writes for this test: the inputs of
// a 2 KiB Winning PoSt and the parameter cache holding its parameters.
type winningFixture struct {
	ProofType  RegisteredPoStProof `json:"proof_type"`
	Miner      ActorID             `json:"miner"`
	Randomness string              `json:"randomness"`
	Vanilla    []string            `json:"vanilla"`
	ParamCache string              `json:"param_cache"`
}

// loadWinningFixture reads the fixture and points filecoin-proofs at its parameters; it skips
// the test unless CUZK_FILECOIN_FIXTURES names the directory `cargo test --features filecoin
// --test filecoin` wrote (<target>/tmp/filecoin-fixtures) and the library has the feature.
func loadWinningFixture(t *testing.T) (f winningFixture, randomness []byte, vanilla [][]byte) {
	t.Helper()
	if !FilecoinAvailable() {
		t.Skip("the library was built without the filecoin feature")
	}
	dir := os.Getenv("CUZK_FILECOIN_FIXTURES")
	if dir == "" {
		t.Skip("CUZK_FILECOIN_FIXTURES is not set")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "winning.json"))
	must(t, err)
	must(t, json.Unmarshal(raw, &f))
	// Read once by filecoin-proofs, at its first use in this process.
	must(t, os.Setenv("FIL_PROOFS_PARAMETER_CACHE", f.ParamCache))
	randomness, err = hex.DecodeString(f.Randomness)
	must(t, err)
	for _, v := range f.Vanilla {
		b, err := hex.DecodeString(v)
		must(t, err)
		vanilla = append(vanilla, b)
	}
	return f, randomness, vanilla
}

func TestFilecoinWinningPoStProves(t *testing.T) {
	f, randomness, vanilla := loadWinningFixture(t)
	// Called as Curio calls ffidirect (curio_test.go), on the process-wide Filecoin engine.
	var ffi curioFFIDirect = (*Engine)(nil)
	proofs, err := ffi.GenerateWinningPoStWithVanilla(f.ProofType, f.Miner, randomness, vanilla)
	must(t, err)
	// The library checks every proof against the verifying key before returning it.
	if len(proofs) != 1 || len(proofs[0].ProofBytes) != ProofBytes || proofs[0].PoStProof != f.ProofType {
		t.Fatalf("unexpected proofs: %+v", proofs)
	}
	// A corrupted vanilla proof is refused with a status, not a crash.
	bad := append([]byte{}, vanilla[0]...)
	bad = bad[:len(bad)/2]
	_, err = GenerateWinningPoStWithVanilla(f.ProofType, f.Miner, randomness, [][]byte{bad})
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Fatalf("truncated vanilla proof: %v", err)
	}

	// Submitted: progress polled and pushed, then the same proof from Wait; at a priority of
	// the caller's.
	job, err := SubmitWinningPoStWithVanilla(PriorityDefault, f.ProofType, f.Miner, randomness, vanilla)
	must(t, err)
	var mu sync.Mutex
	var events []ProgressEvent
	must(t, job.OnProgress(func(ev ProgressEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}))
	b, err := job.Wait()
	must(t, err)
	if len(b) != ProofBytes {
		t.Fatalf("submitted Winning PoSt: %d bytes", len(b))
	}
	if p, err := job.Progress(); err != nil || p != (JobProgress{Done: 1, Total: 1, Finished: true}) {
		t.Fatalf("progress after Wait: %+v, %v", p, err)
	}
	mu.Lock()
	got := append([]ProgressEvent(nil), events...)
	mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress events")
	}
	last := got[len(got)-1]
	if !last.Finished || last.Done != 1 || last.Failed != 0 || last.Total != 1 {
		t.Fatalf("last event %+v", last)
	}
	for i, ev := range got {
		if ev.JobID != last.JobID || ev.Total != 1 || (ev.Finished && i != len(got)-1) ||
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
	if _, err := job.Wait(); status(err) != StatusInvalidArgument {
		t.Fatalf("a second Wait: %v", err)
	}
	must(t, job.Close())
	if job.Close() != ErrClosed {
		t.Fatal("a second Close")
	}
	if err := job.OnProgress(func(ProgressEvent) {}); err != ErrClosed {
		t.Fatalf("OnProgress of a closed job: %v", err)
	}
	// Cancelled at once: Wait says so if the cancel came in time, else it gives the proof.
	job, err = SubmitWinningPoStWithVanilla(PriorityWindowPoSt, f.ProofType, f.Miner, randomness, vanilla)
	must(t, err)
	defer job.Close()
	cancelled := job.Cancel()
	b, err = job.Wait()
	if cancelled && status(err) != StatusCancelled || !cancelled && (err != nil || len(b) != ProofBytes) {
		t.Fatalf("cancel returned %v, then Wait: %d bytes, %v", cancelled, len(b), err)
	}
	// The engine started: its configuration cannot change any more.
	if err := ConfigureFilecoin(DefaultEngineConfig()); status(err) != StatusInvalidArgument {
		t.Fatalf("ConfigureFilecoin after the first proof: %v", err)
	}
}
