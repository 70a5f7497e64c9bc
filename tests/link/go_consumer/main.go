// Command go_consumer is a program outside the cuzk repository that uses its Go package the
// way a consumer (Curio) does: tests/link/go_consumer.sh copies it into a scratch module that
// requires the package by its module path and replaces it with a checkout. It proves and
// verifies the toy circuit, checks that the linked library is the one the header describes,
// and calls a Filecoin function with the go-state-types-shaped types.
//
//	go_consumer FEATURES
//
// FEATURES is the feature list scripts/build-lib.sh built the library with ("default",
// "filecoin", "cuda,filecoin", ...): the library must have the Filecoin functions exactly
// when it names `filecoin`.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	cuzk "github.com/filecoin-project/cuzk/examples/go"
)

func run(features string) error {
	fmt.Printf("cuzk %s (ABI %d, header %d), built with features: %s\n",
		cuzk.Version(), cuzk.ABIVersion(), cuzk.HeaderABIVersion, features)
	if cuzk.ABIVersion() != cuzk.HeaderABIVersion {
		return fmt.Errorf("the library has ABI %d, the package's header %d", cuzk.ABIVersion(), cuzk.HeaderABIVersion)
	}
	wantFilecoin := strings.Contains(","+features+",", ",filecoin,")
	if cuzk.FilecoinAvailable() != wantFilecoin {
		return fmt.Errorf("FilecoinAvailable() = %v for a library built with features %q", cuzk.FilecoinAvailable(), features)
	}

	r1cs, err := cuzk.Toy()
	if err != nil {
		return err
	}
	defer r1cs.Close()
	params, err := cuzk.GenerateInsecureDevelopmentParams(r1cs, 7)
	if err != nil {
		return err
	}
	defer params.Close()
	prover, err := cuzk.NewProver(cuzk.Auto, 0, nil)
	if err != nil {
		return err
	}
	defer prover.Close()
	public, aux := cuzk.ToyWitness(5)
	a, err := cuzk.NewR1CSAssignment(r1cs, nil, public, aux)
	if err != nil {
		return err
	}
	proofs, _, err := prover.Prove(params, []*cuzk.Assignment{a}, nil, nil)
	if err != nil {
		return err
	}
	vk, err := params.VerifyingKey()
	if err != nil {
		return err
	}
	if ok, err := cuzk.Verify(vk, proofs[0], public); err != nil || !ok {
		return fmt.Errorf("the toy proof does not verify (%v)", err)
	}
	fmt.Printf("toy proof on the %s backend: verifies\n", prover.BackendName())

	// A Curio-shaped call: the types are go-state-types' names and underlying types.
	var (
		sector cuzk.SectorNumber = 1
		miner  cuzk.ActorID      = 1000
	)
	_, err = cuzk.SealCommitPhase2([]byte("not json"), sector, miner) // on the process-wide Filecoin engine
	var e *cuzk.Error
	want := cuzk.StatusUnsupported
	if wantFilecoin {
		want = cuzk.StatusInvalidArgument
	}
	if !errors.As(err, &e) || e.Status != want {
		return fmt.Errorf("SealCommitPhase2 of a garbage phase-1 output: %v; want status %v", err, want)
	}
	fmt.Printf("SealCommitPhase2 of a garbage phase-1 output: %v (as expected)\n", e.Status)
	return nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_consumer FEATURES")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "go_consumer:", err)
		os.Exit(1)
	}
}
