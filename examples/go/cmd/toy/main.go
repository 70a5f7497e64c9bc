// Command toy proves knowledge of x with x³ + x + 5 = y through cuzk (Auto backend: the GPU
// when the library is built with CUDA and finds one), with INSECURE development parameters.
package main

import (
	"fmt"
	"os"

	cuzk "github.com/filecoin-project/cuzk/examples/go"
)

func run() error {
	fmt.Printf("cuzk %s (ABI %d)\n", cuzk.Version(), cuzk.ABIVersion())
	r1cs, err := cuzk.Toy()
	if err != nil {
		return err
	}
	defer r1cs.Close()
	params, err := cuzk.GenerateInsecureDevelopmentParams(r1cs, 1234)
	if err != nil {
		return err
	}
	defer params.Close()
	pool, err := cuzk.NewPool(cuzk.DefaultPoolConfig())
	if err != nil {
		return err
	}
	defer pool.Close()
	prover, err := cuzk.NewProver(cuzk.Auto, 0, pool)
	if err != nil {
		return err
	}
	defer prover.Close()
	public, aux := cuzk.ToyWitness(3)
	a, err := cuzk.NewR1CSAssignment(r1cs, pool, public, aux)
	if err != nil {
		return err
	}
	proofs, t, err := prover.Prove(params, []*cuzk.Assignment{a}, nil, nil)
	if err != nil {
		return err
	}
	vk, err := params.VerifyingKey()
	if err != nil {
		return err
	}
	ok, err := cuzk.Verify(vk, proofs[0], public)
	if err != nil {
		return err
	}
	wrong, _ := cuzk.ToyWitness(4)
	bad, err := cuzk.Verify(vk, proofs[0], wrong)
	if err != nil {
		return err
	}
	fmt.Printf("backend %s, proved in %v; y = 35 verifies: %v; y = 73 verifies: %v\n", prover.BackendName(), t.Total, ok, bad)
	if !ok || bad {
		return fmt.Errorf("verification gave the wrong answer")
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "toy:", err)
		os.Exit(1)
	}
}
