//! The namespace methods of a constraint system that keeps no names: cuzk's constraint systems
//! (the assignment, the witness-only system, the development setup's recorder) record values
//! and structure only, as bellperson's prover does, and are their own root.

/// Expands, inside an `impl ConstraintSystem<Scalar> for T` with `type Root = Self`, to the
/// namespace methods of a system that keeps no names: namespaces are ignored and the system
/// is its own root.
macro_rules! unnamed_namespaces {
    () => {
        fn push_namespace<NR, N>(&mut self, _: N)
        where
            NR: Into<String>,
            N: FnOnce() -> NR,
        {
        }

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self::Root {
            self
        }
    };
}

pub(crate) use unnamed_namespaces;
