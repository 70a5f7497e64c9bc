//! The native witness of storage-proofs-porep 19.1's `StackedCircuit` (PoRep C2): from the
//! inputs `StackedCompound::circuit` builds a partition's circuit from — the public inputs
//! and the partition's vanilla proofs (one per challenge) — the circuit's public inputs and
//! aux values, in its allocation order, without any gadget.
//!
//! The circuit (`StackedCircuit::synthesize`) allocates, once: `replica_id` (public) and its
//! 255 bits, `comm_d` and `comm_r` (public), `comm_r_last`, `comm_c`, and the Poseidon hash of
//! `comm_c ‖ comm_r_last`. Then per challenge (`circuit::params::Proof::synthesize`):
//! 1. the data leaf, and its inclusion in TreeD (SHA-256, binary) under `comm_d`;
//! 2. per DRG parent, then per expander parent: its column (one value a layer), the column's
//!    Poseidon hash (arity = layers) and its inclusion in TreeC under `comm_c`;
//! 3. the challenge as 64 allocated bits, packed into one public input;
//! 4. per layer, the parents' labels of that layer as 255 allocated bits each (the DRG
//!    parents' rows, and from layer 2 the expander parents' rows of the layer before), and the
//!    label: SHA-256 of `replica_id ‖ layer ‖ challenge ‖ 37 parents` (20 blocks), its first
//!    254 bits packed into a number;
//! 5. the encoded node (last label + data leaf) and its inclusion in TreeR under `comm_r_last`;
//! 6. the Poseidon hash of the challenged column (the labels) and its inclusion in TreeC.
//!
//! Each inclusion is a private `PoRCircuit`, whose packed index bits are public inputs. The
//! challenges are independent: [`stacked_witness_parallel`] generates them on several threads
//! and merges them in order.
//!
//! Two fields the circuit reads are private to storage-proofs (a column proof's column and
//! path, a labeling proof's node): they are read through the vanilla proof's own serde form
//! (bincode), into mirrors of their serde forms (`ColumnProofForm`, `ColumnForm`, `LabelNode`
//! below).

use std::marker::PhantomData;

use bellpepper_core::ConstraintSystem;
use blstrs::Scalar;
use filecoin_hashers::Hasher;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{ColumnProof, LabelingProof, Proof, PublicInputs, PublicParams};

use super::gadgets::{
    alloc_num, multipack, pack_bits, por_circuit, poseidon_merkle, reverse_bit_numbering, sha256, to_bits_le,
    u64_into_bits_le, AuxSink, Bit, Level, NodeHash, Root, U32,
};
use crate::compiled::WitnessCs;
use crate::error::{Error, Result};

/// `TOTAL_PARENTS`: the parents' labels a label hashes (with repeats).
const TOTAL_PARENTS: usize = 37;

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Writes the aux values of the `StackedCircuit` that `StackedCompound::circuit(pub_in, (),
/// vanilla, pub_params, partition_k)` builds into `aux`, and returns its public inputs after
/// the "one" (`replica_id`, `comm_d`, `comm_r`, then per challenge the packed index bits of
/// each inclusion proof and the challenge).
///
/// # Errors
/// [`Error::InvalidArgument`] where the circuit's construction or synthesis fails (no vanilla
/// proofs, inconsistent `comm_c` or `comm_r_last`, no `tau`, a challenge without parents or
/// with columns of different heights, parents other than 37 with repeats), for trees other
/// than Poseidon (TreeC, TreeR) and SHA-256 (TreeD), or a vanilla proof with a missing path
/// value.
pub fn stacked_witness<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher>(
    pub_in: &PublicInputs<Domain<Tree>, G::Domain>,
    vanilla: &[Proof<Tree, G>],
    pub_params: &PublicParams<Tree>,
    partition_k: Option<usize>,
    aux: &mut impl AuxSink,
) -> Result<Vec<Scalar>> {
    let _ = (pub_params, partition_k);
    let (header, mut inputs) = Header::write::<Tree, G>(pub_in, vanilla, aux)?;
    for proof in vanilla {
        inputs.extend(challenge::<Tree, G>(aux, &header, proof)?);
    }
    Ok(inputs)
}

/// [`stacked_witness`] on `threads` threads of the current rayon pool, into `cs` (which holds
/// the "one" input already): the partition's header into `cs`, then the challenges in
/// `threads` runs of consecutive challenges, each generated into a system of its own and
/// merged into `cs` in order. Public inputs and aux land as the sequential generator's.
///
/// # Errors
/// As [`stacked_witness`].
// `&Vec`: the scheme's proof type (`StackedDrg::Proof`), as the Filecoin jobs pass it.
#[allow(clippy::ptr_arg)]
pub fn stacked_witness_parallel<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher>(
    pub_in: &PublicInputs<Domain<Tree>, G::Domain>,
    vanilla: &Vec<Proof<Tree, G>>,
    pub_params: &PublicParams<Tree>,
    partition_k: Option<usize>,
    threads: usize,
    cs: &mut WitnessCs,
) -> Result<()> {
    let _ = (pub_params, partition_k);
    let (header, inputs) = Header::write::<Tree, G>(pub_in, vanilla, cs)?;
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v))?;
    }
    super::in_runs(vanilla, threads, cs, |part, proof| {
        challenge::<Tree, G>(part, &header, proof)
    })
}

/// What every challenge of a partition shares: the allocated commitments and the replica
/// id's bits as the labels hash them.
struct Header {
    comm_d: Scalar,
    comm_c: Scalar,
    comm_r_last: Scalar,
    /// `reverse_bit_numbering(replica_id.to_bits_le())`: 256 bits, each byte's most
    /// significant bit first (the last byte padded with a constant).
    replica_id_bits: Vec<Bit>,
}

impl Header {
    /// The circuit's allocations before its first challenge; returns them and the public
    /// inputs they make.
    fn write<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher>(
        pub_in: &PublicInputs<Domain<Tree>, G::Domain>,
        vanilla: &[Proof<Tree, G>],
        aux: &mut impl AuxSink,
    ) -> Result<(Self, Vec<Scalar>)> {
        let invalid = |m: &str| Err(Error::InvalidArgument(format!("native PoRep witness: {m}")));
        if <Tree::Hasher as Hasher>::name() != "poseidon_hasher" {
            return invalid(&format!(
                "TreeC and TreeR must be Poseidon trees, not {}",
                <Tree::Hasher as Hasher>::name()
            ));
        }
        if G::name() != "sha256_hasher" {
            return invalid(&format!("TreeD must be a SHA-256 tree, not {}", G::name()));
        }
        // StackedCompound::circuit.
        let Some(first) = vanilla.first() else {
            return invalid("no vanilla proofs");
        };
        let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
        if vanilla.iter().any(|p| p.comm_r_last() != comm_r_last) {
            return invalid("inconsistent comm_r_lasts");
        }
        if vanilla.iter().any(|p| p.comm_c() != comm_c) {
            return invalid("inconsistent comm_cs");
        }
        let Some(tau) = pub_in.tau.as_ref() else {
            return invalid("the public inputs have no tau (comm_d, comm_r)");
        };
        // StackedCircuit::synthesize.
        let replica_id = alloc_num(aux, pub_in.replica_id.into());
        let replica_id_bits = reverse_bit_numbering(to_bits_le(aux, replica_id));
        let comm_d = alloc_num(aux, tau.comm_d.into());
        let comm_r = alloc_num(aux, tau.comm_r.into());
        let comm_r_last = alloc_num(aux, comm_r_last.into());
        let comm_c = alloc_num(aux, comm_c.into());
        poseidon_merkle(aux, &[comm_c, comm_r_last]);
        Ok((
            Self {
                comm_d,
                comm_c,
                comm_r_last,
                replica_id_bits,
            },
            vec![replica_id, comm_d, comm_r],
        ))
    }
}

/// One challenge (`circuit::params::Proof::synthesize`): its aux values into `aux`; returns
/// its public inputs.
fn challenge<Tree: 'static + MerkleTreeTrait, G: 'static + Hasher>(
    aux: &mut impl AuxSink,
    header: &Header,
    proof: &Proof<Tree, G>,
) -> Result<Vec<Scalar>> {
    let mut inputs = Vec::new();
    let columns = &proof.replica_column_proofs;
    let drg = columns.drg_parents.iter().map(Opened::of).collect::<Result<Vec<_>>>()?;
    let exp = columns.exp_parents.iter().map(Opened::of).collect::<Result<Vec<_>>>()?;
    let c_x = Opened::of(&columns.c_x)?;
    let Some(layers) = drg.first().map(|c| c.rows.len()) else {
        return Err(Error::InvalidArgument(
            "native PoRep witness: a challenge without DRG parents".into(),
        ));
    };
    // hash_single_column hashes columns of 2 or 11 rows (and panics on others).
    if exp.is_empty() || ![2, 11].contains(&layers) || drg.iter().chain(&exp).any(|c| c.rows.len() != layers) {
        return Err(Error::InvalidArgument(format!(
            "native PoRep witness: a challenge's columns are not all 2 or 11 rows ({layers} in the first), or it has no expander parents"
        )));
    }

    // The data leaf and its inclusion in TreeD.
    let data_leaf = alloc_num(aux, proof.comm_d_proofs.leaf().into());
    let comm_d_path = super::levels(&proof.comm_d_proofs.as_options(), "native PoRep witness")?;
    inputs.extend(inclusion(aux, NodeHash::Sha256, data_leaf, &comm_d_path, header.comm_d));

    // The parents' columns, their hashes and their inclusion in TreeC.
    for column in drg.iter().chain(&exp) {
        for &row in &column.rows {
            alloc_num(aux, row);
        }
        let hash = poseidon_merkle(aux, &column.rows);
        inputs.extend(inclusion(aux, NodeHash::Poseidon, hash, &column.path, header.comm_c));
    }

    // The challenge: 64 allocated bits, one public input.
    let node = challenged_node(proof)?;
    let node_bits = u64_into_bits_le(aux, node);
    inputs.extend(multipack(&node_bits));
    let node_bits_be: Vec<Bit> = node_bits.iter().rev().copied().collect();

    // The labels of the challenged column, layer by layer.
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Vec<Bit>> = drg
            .iter()
            .map(|c| reverse_bit_numbering(to_bits_le(aux, c.rows[layer - 1])))
            .collect();
        if layer > 1 {
            parents.extend(
                exp.iter()
                    .map(|c| reverse_bit_numbering(to_bits_le(aux, c.rows[layer - 2]))),
            );
        }
        let expanded: Vec<&[Bit]> = if layer > 1 {
            parents
                .iter()
                .chain(&parents)
                .chain(parents.iter().take(9))
                .map(Vec::as_slice)
                .collect()
        } else {
            (0..6)
                .flat_map(|_| parents.iter())
                .chain(parents.iter().take(1))
                .map(Vec::as_slice)
                .collect()
        };
        if expanded.len() != TOTAL_PARENTS {
            return Err(Error::InvalidArgument(format!(
                "native PoRep witness: layer {layer} has {} parents with repeats, not {TOTAL_PARENTS}",
                expanded.len()
            )));
        }
        labels.push(label(
            aux,
            &header.replica_id_bits,
            layer as u32,
            &node_bits_be,
            &expanded,
        ));
    }

    // The encoded node and its inclusion in TreeR.
    let key = *labels.last().expect("at least one layer");
    let encoded = alloc_num(aux, key + data_leaf);
    let comm_r_last_path = super::levels(&proof.comm_r_last_proof.as_options(), "native PoRep witness")?;
    inputs.extend(inclusion(
        aux,
        NodeHash::Poseidon,
        encoded,
        &comm_r_last_path,
        header.comm_r_last,
    ));

    // The challenged column's hash and its inclusion in TreeC.
    let column_hash = poseidon_merkle(aux, &labels);
    inputs.extend(inclusion(
        aux,
        NodeHash::Poseidon,
        column_hash,
        &c_x.path,
        header.comm_c,
    ));
    Ok(inputs)
}

/// `create_label_circuit`: SHA-256 of `replica_id ‖ layer (32 bits) ‖ node (64 bits) ‖ 0…`
/// (64 bytes), then each parent's 256 bits; the digest's bits, each byte's order reversed,
/// the first 254 packed into an allocated number.
fn label(aux: &mut impl AuxSink, replica_id: &[Bit], layer: u32, node_be: &[Bit], parents: &[&[Bit]]) -> Scalar {
    let mut message = Vec::with_capacity((2 + TOTAL_PARENTS) * 256);
    message.extend_from_slice(replica_id);
    message.resize(256, Bit::Constant(false));
    message.extend(U32::constant(layer).into_bits_be());
    message.extend_from_slice(node_be);
    message.resize(512, Bit::Constant(false));
    for parent in parents {
        message.extend_from_slice(parent);
        message.resize(message.len().next_multiple_of(256), Bit::Constant(false));
    }
    let digest = sha256(aux, &message);
    pack_bits(aux, &reverse_bit_numbering(digest)[..254])
}

/// `enforce_inclusion`: a private `PoRCircuit` from an allocated leaf to an allocated root;
/// returns its public inputs (the packed index bits).
fn inclusion(aux: &mut impl AuxSink, hash: NodeHash, leaf: Scalar, path: &[Level], root: Scalar) -> Vec<Scalar> {
    por_circuit(aux, hash, Root::Var(leaf), path, Root::Var(root), true).inputs
}

/// A column proof opened: the column's rows (layer 1 first) and its path in TreeC.
struct Opened {
    rows: Vec<Scalar>,
    path: Vec<Level>,
}

/// The serde form of storage-proofs-porep's `ColumnProof` (its fields are private): the
/// column, then the inclusion proof.
#[derive(Deserialize)]
#[serde(bound = "P: DeserializeOwned, D: DeserializeOwned")]
struct ColumnProofForm<D, P> {
    column: ColumnForm<D>,
    inclusion_proof: P,
}

/// The serde form of storage-proofs-porep's `Column`: its index, its rows, a marker.
#[derive(Deserialize)]
#[serde(bound = "D: DeserializeOwned")]
struct ColumnForm<D> {
    #[allow(dead_code)]
    index: u32,
    rows: Vec<D>,
    #[allow(dead_code)]
    _h: PhantomData<()>,
}

impl Opened {
    fn of<P: MerkleProofTrait + Serialize + DeserializeOwned>(proof: &ColumnProof<P>) -> Result<Self>
    where
        <P::Hasher as Hasher>::Domain: DeserializeOwned,
    {
        let form: ColumnProofForm<<P::Hasher as Hasher>::Domain, P> = reread(proof, "a column proof")?;
        Ok(Self {
            rows: form.column.rows.into_iter().map(Into::into).collect(),
            path: super::levels(&form.inclusion_proof.as_options(), "native PoRep witness")?,
        })
    }
}

/// The serde form of storage-proofs-porep's `LabelingProof` (fields private; its marker is
/// not serialized).
#[derive(Deserialize)]
#[serde(bound = "D: DeserializeOwned")]
struct LabelNode<D> {
    #[allow(dead_code)]
    parents: Vec<D>,
    #[allow(dead_code)]
    layer_index: u32,
    node: u64,
}

/// The challenge as the circuit takes it: the first labeling proof's node.
fn challenged_node<Tree: MerkleTreeTrait, G: Hasher>(proof: &Proof<Tree, G>) -> Result<u64> {
    let Some(first) = proof.labeling_proofs.first() else {
        return Err(Error::InvalidArgument(
            "native PoRep witness: a challenge without labeling proofs".into(),
        ));
    };
    let form: LabelNode<Domain<Tree>> = reread::<LabelingProof<Tree::Hasher>, _>(first, "a labeling proof")?;
    Ok(form.node)
}

/// `value` through its bincode form into `T`.
fn reread<S: Serialize, T: DeserializeOwned>(value: &S, what: &str) -> Result<T> {
    let bytes = bincode::serialize(value)
        .map_err(|e| Error::InvalidArgument(format!("native PoRep witness: {what} does not serialize: {e}")))?;
    bincode::deserialize(&bytes)
        .map_err(|e| Error::InvalidArgument(format!("native PoRep witness: {what} does not read back: {e}")))
}
