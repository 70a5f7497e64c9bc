package cuzk

// Toy is the classic toy circuit x³ + x + 5 = y (y public), as an R1CS over the variables
// 0 = one, 1 = y, 2 = x, 3 = x², 4 = x³: x·x = x², x²·x = x³, (x³ + x + 5)·1 = y.
func Toy() (*R1CS, error) {
	t := func(row, v uint32, c int64) Term { return Term{row, v, ScalarFromInt64(c)} }
	a := []Term{t(0, 2, 1), t(1, 3, 1), t(2, 4, 1), t(2, 2, 1), t(2, 0, 5)}
	b := []Term{t(0, 2, 1), t(1, 2, 1), t(2, 0, 1)}
	c := []Term{t(0, 3, 1), t(1, 4, 1), t(2, 1, 1)}
	return NewR1CS(1, 3, 3, a, b, c)
}

// ToyWitness is the witness for x: the public y and the aux values x, x², x³.
func ToyWitness(x int64) (public, aux [][]byte) {
	y := x*x*x + x + 5
	return [][]byte{ScalarFromInt64(y)}, [][]byte{ScalarFromInt64(x), ScalarFromInt64(x * x), ScalarFromInt64(x * x * x)}
}
