package cuzk

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// curioFFIDirect is the proving part of Curio's ffidirect.FFI (lib/ffiselect/ffidirect: the
// methods ffiselect calls by name in a child process bound to one GPU), written over this
// package's types where Curio has go-state-types' abi.X, proof.PoStProof and filecoin-ffi's
// PartitionProof, and the CIDs as their bytes (cid.Cid.Bytes()). A Curio adapter (README.md)
// is then conversions only.
type curioFFIDirect interface {
	SealCommitPhase2(phase1Output []byte, sectorNum SectorNumber, minerID ActorID) ([]byte, error)
	GenerateSinglePartitionWindowPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error)
	GenerateWinningPoStWithVanilla(proofType RegisteredPoStProof, minerID ActorID, randomness PoStRandomness, proofs [][]byte) ([]PoStProof, error)
	GenerateUpdateProofWithVanilla(proofType RegisteredUpdateProof, key, sealed, unsealed []byte, vproofs [][]byte) ([]byte, error)
}

// An *Engine (nil: the process-wide Filecoin engine) has Curio's method set.
var _ curioFFIDirect = (*Engine)(nil)

// commitmentCID is the binary CID go-fil-commcid makes of a 32-byte commitment: version 1, the
// codec, the multihash code and length (unsigned varints), the digest.
func commitmentCID(codec, hash uint64, comm []byte) []byte {
	var out []byte
	for _, v := range []uint64{1, codec, hash, uint64(len(comm))} {
		for v >= 0x80 {
			out = append(out, byte(v)|0x80)
			v >>= 7
		}
		out = append(out, byte(v))
	}
	return append(out, comm...)
}

func sealedCID(comm []byte) []byte   { return commitmentCID(0xf102, 0xb401, comm) }
func unsealedCID(comm []byte) []byte { return commitmentCID(0xf101, 0x1012, comm) }

// The go-state-types definitions, as stand-ins (the package has no go-state-types): each
// conversion the README's adapter makes must compile against them.
type (
	abiSectorNumber          uint64
	abiActorID               uint64
	abiRandomness            []byte
	abiPoStRandomness        abiRandomness
	abiRegisteredPoStProof   int64
	abiRegisteredUpdateProof int64
	proofPoStProof           struct {
		PoStProof  abiRegisteredPoStProof
		ProofBytes []byte
	}
	ffiPartitionProof proofPoStProof
)

// adaptWinning is the README adapter's Winning PoSt conversion, on the stand-ins.
func adaptWinning(ffi curioFFIDirect, proofType abiRegisteredPoStProof, minerID abiActorID, randomness abiPoStRandomness, proofs [][]byte) ([]proofPoStProof, error) {
	ps, err := ffi.GenerateWinningPoStWithVanilla(RegisteredPoStProof(proofType), ActorID(minerID), PoStRandomness(randomness), proofs)
	if err != nil {
		return nil, err
	}
	out := make([]proofPoStProof, len(ps))
	for i, p := range ps {
		out[i] = proofPoStProof{PoStProof: abiRegisteredPoStProof(p.PoStProof), ProofBytes: p.ProofBytes}
	}
	return out, nil
}

func TestFilecoinTypesHaveGoStateTypesShapes(t *testing.T) {
	kinds := []struct {
		v    any
		kind reflect.Kind
	}{
		{SectorNumber(0), reflect.Uint64},
		{ActorID(0), reflect.Uint64},
		{RegisteredPoStProof(0), reflect.Int64},
		{RegisteredUpdateProof(0), reflect.Int64},
		{PoStRandomness(nil), reflect.Slice},
	}
	for _, k := range kinds {
		if got := reflect.TypeOf(k.v).Kind(); got != k.kind {
			t.Errorf("%T is a %v; go-state-types' is a %v", k.v, got, k.kind)
		}
	}
	if e := reflect.TypeOf(PoStRandomness(nil)).Elem().Kind(); e != reflect.Uint8 {
		t.Errorf("PoStRandomness is a slice of %v, not of bytes", e)
	}
	// proof.PoStProof's fields, in order, and PartitionProof with the same ones.
	for _, typ := range []reflect.Type{reflect.TypeOf(PoStProof{}), reflect.TypeOf(PartitionProof{})} {
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			fields = append(fields, typ.Field(i).Name+" "+typ.Field(i).Type.String())
		}
		if got, want := strings.Join(fields, "; "), "PoStProof cuzk.RegisteredPoStProof; ProofBytes []uint8"; got != want {
			t.Errorf("%v has fields {%s}; want {%s}", typ, got, want)
		}
	}
	// Conversions both ways between the package's types and go-state-types' (stand-ins).
	pp := PartitionProof(PoStProof{PoStProof: RegisteredPoStProof_StackedDrgWindow32GiBV1_1, ProofBytes: []byte{1}})
	fp := ffiPartitionProof{PoStProof: abiRegisteredPoStProof(pp.PoStProof), ProofBytes: pp.ProofBytes}
	if SectorNumber(abiSectorNumber(7)) != 7 || abiActorID(ActorID(1000)) != 1000 || fp.PoStProof != 13 ||
		RegisteredUpdateProof(abiRegisteredUpdateProof(3)) != RegisteredUpdateProof_StackedDrg32GiBV1 {
		t.Error("a conversion changed a value")
	}
}

// goStateTypesPoSt is go-state-types' abi.RegisteredPoStProof table (abi/sector.go), by name.
var goStateTypesPoSt = []struct {
	name  string
	value RegisteredPoStProof
	want  int64
}{
	{"StackedDrgWinning2KiBV1", RegisteredPoStProof_StackedDrgWinning2KiBV1, 0},
	{"StackedDrgWinning8MiBV1", RegisteredPoStProof_StackedDrgWinning8MiBV1, 1},
	{"StackedDrgWinning512MiBV1", RegisteredPoStProof_StackedDrgWinning512MiBV1, 2},
	{"StackedDrgWinning32GiBV1", RegisteredPoStProof_StackedDrgWinning32GiBV1, 3},
	{"StackedDrgWinning64GiBV1", RegisteredPoStProof_StackedDrgWinning64GiBV1, 4},
	{"StackedDrgWindow2KiBV1", RegisteredPoStProof_StackedDrgWindow2KiBV1, 5},
	{"StackedDrgWindow8MiBV1", RegisteredPoStProof_StackedDrgWindow8MiBV1, 6},
	{"StackedDrgWindow512MiBV1", RegisteredPoStProof_StackedDrgWindow512MiBV1, 7},
	{"StackedDrgWindow32GiBV1", RegisteredPoStProof_StackedDrgWindow32GiBV1, 8},
	{"StackedDrgWindow64GiBV1", RegisteredPoStProof_StackedDrgWindow64GiBV1, 9},
	{"StackedDrgWindow2KiBV1_1", RegisteredPoStProof_StackedDrgWindow2KiBV1_1, 10},
	{"StackedDrgWindow8MiBV1_1", RegisteredPoStProof_StackedDrgWindow8MiBV1_1, 11},
	{"StackedDrgWindow512MiBV1_1", RegisteredPoStProof_StackedDrgWindow512MiBV1_1, 12},
	{"StackedDrgWindow32GiBV1_1", RegisteredPoStProof_StackedDrgWindow32GiBV1_1, 13},
	{"StackedDrgWindow64GiBV1_1", RegisteredPoStProof_StackedDrgWindow64GiBV1_1, 14},
}

func TestFilecoinProofTypeValuesAreGoStateTypes(t *testing.T) {
	for _, c := range goStateTypesPoSt {
		if int64(c.value) != c.want {
			t.Errorf("RegisteredPoStProof_%s = %d; go-state-types has %d", c.name, c.value, c.want)
		}
	}
	update := []RegisteredUpdateProof{
		RegisteredUpdateProof_StackedDrg2KiBV1, RegisteredUpdateProof_StackedDrg8MiBV1,
		RegisteredUpdateProof_StackedDrg512MiBV1, RegisteredUpdateProof_StackedDrg32GiBV1,
		RegisteredUpdateProof_StackedDrg64GiBV1,
	}
	for i, v := range update {
		if int64(v) != int64(i) {
			t.Errorf("update proof %d has value %d", i, v)
		}
	}
}

// The library (filecoin-proofs-api's enums behind the C ABI) names each PoSt value as
// go-state-types does: a Winning type given to the Window call, or a Window type given to the
// Winning call, is refused with a message naming the type the library read from the value.
func TestFilecoinProofTypeValuesMeanTheSameToTheLibrary(t *testing.T) {
	if !FilecoinAvailable() {
		t.Skip("the library was built without the filecoin feature")
	}
	rnd := make(PoStRandomness, 32)
	for _, c := range goStateTypesPoSt {
		winning := strings.HasPrefix(c.name, "StackedDrgWinning")
		call := GenerateWinningPoStWithVanilla
		if winning {
			call = GenerateWindowPoStWithVanilla // the other kind: refused before any proving
		}
		_, err := call(c.value, 1000, rnd, [][]byte{{1}})
		// filecoin-proofs-api calls go-state-types' Window V1_1 types V1_2.
		name := strings.Replace(c.name, "V1_1", "V1_2", 1)
		if status(err) != StatusInvalidArgument || !strings.Contains(err.Error(), name+" is a ") {
			t.Errorf("%s (%d) given to the other PoSt kind: %v; want a refusal naming %s", c.name, c.value, err, name)
		}
	}
	_, err := GenerateWinningPoStWithVanilla(RegisteredPoStProof_StackedDrgWindow64GiBV1_1+1, 1000, rnd, [][]byte{{1}})
	if status(err) != StatusInvalidArgument {
		t.Errorf("PoSt proof type 15: %v", err)
	}
	// Update types, by their update partition counts (filecoin-proofs: 1 for 2 KiB sectors, 4
	// for 8 MiB, 16 from 512 MiB on): a value read as another size is refused with another
	// count.
	c := make([]byte, 32)
	for v, partitions := range []int{1, 4, 16, 16, 16} {
		_, err := GenerateUpdateProofWithVanilla(RegisteredUpdateProof(v), sealedCID(c), sealedCID(c), unsealedCID(c), nil)
		if want := fmt.Sprintf("has %d update partitions", partitions); status(err) != StatusInvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("update proof type %d with no vanilla proofs: %v; want %q", v, err, want)
		}
	}
	if _, err := GenerateUpdateProofWithVanilla(RegisteredUpdateProof_StackedDrg64GiBV1+1, sealedCID(c), sealedCID(c), unsealedCID(c), nil); status(err) != StatusInvalidArgument {
		t.Errorf("update proof type 5: %v", err)
	}
}

// Each call of the method set reaches the library through the interface, on the process-wide
// Filecoin engine and on an engine of the test's (the Winning PoSt proves in
// TestFilecoinWinningPoStProves, through the same interface).
func TestFilecoinCurioMethodSetReachesTheLibrary(t *testing.T) {
	cfg := DefaultEngineConfig()
	cfg.Backend, cfg.Memory = CPU, Heap
	eng, err := NewEngine(cfg)
	must(t, err)
	defer eng.Close()
	for _, ffi := range []curioFFIDirect{(*Engine)(nil), eng} {
		want := StatusUnsupported
		if FilecoinAvailable() {
			want = StatusInvalidArgument
		}
		c := make([]byte, 32)
		if _, err := ffi.SealCommitPhase2([]byte("not json"), 1, 1000); status(err) != want {
			t.Errorf("SealCommitPhase2: %v; want status %v", err, want)
		}
		if _, err := ffi.GenerateUpdateProofWithVanilla(RegisteredUpdateProof_StackedDrg2KiBV1, sealedCID(c), sealedCID(c), unsealedCID(c), nil); status(err) != want {
			t.Errorf("GenerateUpdateProofWithVanilla: %v; want status %v", err, want)
		}
		_, err := adaptWinning(ffi, abiRegisteredPoStProof(RegisteredPoStProof_StackedDrgWindow2KiBV1), 1000, make(abiPoStRandomness, 32), [][]byte{{1}})
		if status(err) != want {
			t.Errorf("GenerateWinningPoStWithVanilla with a Window type: %v; want status %v", err, want)
		}
		_, err = ffi.GenerateSinglePartitionWindowPoStWithVanilla(RegisteredPoStProof_StackedDrgWinning2KiBV1, 1000, make(PoStRandomness, 32), [][]byte{{1}}, 0)
		if status(err) != want || (FilecoinAvailable() && !strings.Contains(err.Error(), "not a Window one")) {
			t.Errorf("GenerateSinglePartitionWindowPoStWithVanilla with a Winning type: %v; want status %v", err, want)
		}
	}
}

// Curio passes cid.Cid values: a CID of the wrong codec, hash or length is refused with a
// message naming the CID and the problem, before any proving.
func TestFilecoinUpdateProofRefusesOtherCIDs(t *testing.T) {
	if !FilecoinAvailable() {
		t.Skip("the library was built without the filecoin feature")
	}
	c := make([]byte, 32)
	s, u := sealedCID(c), unsealedCID(c)
	cases := []struct {
		key, sealed, unsealed []byte
		want                  string
	}{
		{u, s, u, "key (the sector key's CommR): not a Sealed commitment CID: codec 0xf101"},
		{s, s, s, "unsealed (the new CommD): not a Unsealed commitment CID: codec 0xf102"},
		{s, commitmentCID(0xf102, 0x12, c), u, "sealed (the new CommR): not a Sealed commitment CID: multihash 0x12"},
		{s, s, commitmentCID(0xf101, 0x1012, c[:31]), "a 31-byte digest"},
		{c, s, u, "version 0"},
	}
	for _, tc := range cases {
		_, err := GenerateUpdateProofWithVanilla(RegisteredUpdateProof_StackedDrg2KiBV1, tc.key, tc.sealed, tc.unsealed, nil)
		if status(err) != StatusInvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v; want a refusal with %q", err, tc.want)
		}
	}
}
