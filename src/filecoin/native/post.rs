//! The native witness of storage-proofs-post 19.1's `FallbackPoStCircuit` (Winning and Window
//! PoSt): from the inputs `FallbackPoStCompound::circuit` builds the circuit from — the public
//! inputs, one partition's vanilla proof, the public parameters and the partition index — the
//! circuit's public inputs and aux values, in its allocation order, without any gadget.
//!
//! Per sector slot of the partition (the partition's sectors in order, the last one repeated
//! when it has fewer than `sector_count`), the circuit allocates `comm_r_last`, `comm_c` and
//! `comm_r` and makes `comm_r` public, hashes `comm_c ‖ comm_r_last` (Poseidon, arity 2), then
//! proves each challenged leaf's inclusion in the replica tree: a private `PoRCircuit` from
//! the leaf's value to the allocated `comm_r_last`, whose packed index bits are public inputs.
//! Under an extensible system (`WitnessCs`) the sectors are synthesized in chunks and merged:
//! the values land in the same order.

use blstrs::Scalar;
use filecoin_hashers::Hasher;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::{Proof, PublicInputs, PublicParams};

use super::gadgets::{alloc_num, por_circuit, poseidon_merkle, AuxSink, Level, NodeHash, Root};
use crate::error::{Error, Result};

/// Writes the aux values of the `FallbackPoStCircuit` that
/// `FallbackPoStCompound::circuit(pub_in, _, vanilla, pub_params, partition_k)` builds into
/// `aux`, and returns its public inputs after the "one" (one `comm_r` per sector slot, then
/// one packed index per challenge).
///
/// # Errors
/// [`Error::InvalidArgument`] where `FallbackPoStCompound::circuit` fails (a vanilla proof
/// without `sector_count` sectors, a partition past the public sectors), for a tree that is
/// not Poseidon-hashed, or for a vanilla proof with a missing path value.
pub fn fallback_post_witness<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    vanilla: &Proof<Tree::Proof>,
    pub_params: &PublicParams,
    partition_k: Option<usize>,
    aux: &mut impl AuxSink,
) -> Result<Vec<Scalar>> {
    if <Tree::Hasher as Hasher>::name() != "poseidon_hasher" {
        return Err(Error::InvalidArgument(format!(
            "the native PoSt witness is for Poseidon trees, not {}",
            <Tree::Hasher as Hasher>::name()
        )));
    }
    let per_partition = pub_params.sector_count;
    if vanilla.sectors.len() != per_partition {
        return Err(Error::InvalidArgument(format!(
            "vanilla proofs must equal sector_count: {per_partition} != {}",
            vanilla.sectors.len()
        )));
    }
    let sectors = pub_in
        .sectors
        .chunks(per_partition.max(1))
        .nth(partition_k.unwrap_or(0))
        .ok_or_else(|| Error::InvalidArgument("invalid number of sectors/partition index".into()))?;

    let mut inputs = Vec::new();
    for (i, proof) in vanilla.sectors.iter().enumerate() {
        // Repeat the last sector when there are too few to fill the circuit.
        let public = &sectors[i.min(sectors.len() - 1)];
        let comm_r: Scalar = public.comm_r.into();
        let comm_c: Scalar = proof.comm_c.into();
        let comm_r_last = alloc_num(aux, proof.comm_r_last.into());
        alloc_num(aux, comm_c);
        alloc_num(aux, comm_r);
        inputs.push(comm_r);
        poseidon_merkle(aux, &[comm_c, comm_r_last]);

        for inclusion in proof.inclusion_proofs() {
            let leaf: Scalar = inclusion.leaf().into();
            let path = levels(&inclusion.as_options())?;
            let out = por_circuit(
                aux,
                NodeHash::Poseidon,
                Root::Val(leaf),
                &path,
                Root::Var(comm_r_last),
                true,
            );
            inputs.extend(out.inputs);
        }
    }
    Ok(inputs)
}

/// A path as `MerkleProofTrait::as_options` gives it, with every value present.
fn levels(options: &[(Vec<Option<Scalar>>, Option<usize>)]) -> Result<Vec<Level>> {
    options
        .iter()
        .map(|(siblings, index)| {
            let siblings = siblings.iter().copied().collect::<Option<Vec<_>>>();
            match (siblings, index) {
                (Some(s), Some(i)) => Ok((s, *i)),
                _ => Err(Error::InvalidArgument(
                    "a vanilla proof's path has a missing value".into(),
                )),
            }
        })
        .collect()
}
