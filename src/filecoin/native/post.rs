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
use storage_proofs_post::fallback::{Proof, PublicInputs, PublicParams, PublicSector, SectorProof};

use super::gadgets::{alloc_num, por_circuit, poseidon_merkle, AuxSink, NodeHash, Root};
use crate::compiled::WitnessCs;
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
    let slots = sector_slots::<Tree>(pub_in, vanilla, pub_params, partition_k)?;
    let mut inputs = Vec::new();
    for (public, proof) in slots {
        inputs.extend(sector_slot::<Tree>(aux, public, proof)?);
    }
    Ok(inputs)
}

/// [`fallback_post_witness`] on `threads` threads of the current rayon pool, into `cs` (which
/// holds the "one" input already): the sector slots in `threads` runs of consecutive slots,
/// each generated into a system of its own, merged into `cs` in order (as the circuit's own
/// synthesis merges its chunks under an extensible system; one thread: straight into `cs`).
/// Public inputs and aux land as the sequential generator's.
///
/// # Errors
/// As [`fallback_post_witness`] (an error of a merged system surfaces at `cs.finish`, as
/// `WitnessCs::extend` keeps it).
pub fn fallback_post_witness_parallel<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    vanilla: &Proof<Tree::Proof>,
    pub_params: &PublicParams,
    partition_k: Option<usize>,
    threads: usize,
    cs: &mut WitnessCs,
) -> Result<()> {
    let slots = sector_slots::<Tree>(pub_in, vanilla, pub_params, partition_k)?;
    super::in_runs(&slots, threads, cs, |part, &(public, proof)| {
        sector_slot::<Tree>(part, public, proof)
    })
}

/// The partition's sector slots, each with its public sector, as
/// `FallbackPoStCompound::circuit` pairs them (the last public sector repeated when there are
/// fewer than slots).
#[allow(clippy::type_complexity)]
fn sector_slots<'a, Tree: 'static + MerkleTreeTrait>(
    pub_in: &'a PublicInputs<<Tree::Hasher as Hasher>::Domain>,
    vanilla: &'a Proof<Tree::Proof>,
    pub_params: &PublicParams,
    partition_k: Option<usize>,
) -> Result<
    Vec<(
        &'a PublicSector<<Tree::Hasher as Hasher>::Domain>,
        &'a SectorProof<Tree::Proof>,
    )>,
> {
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
    Ok(vanilla
        .sectors
        .iter()
        .enumerate()
        .map(|(i, proof)| (&sectors[i.min(sectors.len() - 1)], proof))
        .collect())
}

/// One sector slot (`Sector::synthesize`): its aux values into `aux`; returns its public
/// inputs.
fn sector_slot<Tree: 'static + MerkleTreeTrait>(
    aux: &mut impl AuxSink,
    public: &PublicSector<<Tree::Hasher as Hasher>::Domain>,
    proof: &SectorProof<Tree::Proof>,
) -> Result<Vec<Scalar>> {
    let comm_r: Scalar = public.comm_r.into();
    let comm_c: Scalar = proof.comm_c.into();
    let comm_r_last = alloc_num(aux, proof.comm_r_last.into());
    alloc_num(aux, comm_c);
    alloc_num(aux, comm_r);
    let mut inputs = vec![comm_r];
    poseidon_merkle(aux, &[comm_c, comm_r_last]);
    for inclusion in proof.inclusion_proofs() {
        let leaf: Scalar = inclusion.leaf().into();
        let path = super::levels(&inclusion.as_options(), "native PoSt witness")?;
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
    Ok(inputs)
}
