//! The native witness of storage-proofs-update 19.1's `EmptySectorUpdateCircuit` (SnapDeals):
//! from the circuit's own inputs — its public parameters, public inputs and private inputs,
//! which `EmptySectorUpdateCompound::circuit` makes from the public inputs and a partition's
//! vanilla proof — the circuit's public inputs and aux values, in its allocation order,
//! without any gadget.
//!
//! The circuit (`EmptySectorUpdateCircuit::synthesize`) allocates, once: `k_and_h_select`
//! (public) and its low bits (the partition index `k`, then the one-hot `h_select`), `k`
//! packed, `comm_r_old`, `comm_d_new`, `comm_r_new` (public), `phi` (Poseidon of
//! `comm_d_new ‖ comm_r_old` with the randomness constants), `comm_c`, `root_r_old`,
//! `root_r_new`, the apex leaves, the partition path's siblings, the two `comm_r` hashes, the
//! apex tree (SHA-256) and its path to `comm_d_new`, and per digest of challenge bits its
//! index, its Poseidon hash and that hash's 255 bits. Then per challenge: the selected high
//! bits (`c_high`), `rho`, the old and new leaves and `leaf_d_new · rho`, the TreeR paths'
//! siblings and their `por_no_challenge_input`s, the apex leaf selected by the challenge's
//! bits, and the TreeD path to it. The challenges are independent:
//! [`update_witness_parallel`] generates them on several threads and merges them in order.

use bellpepper_core::ConstraintSystem;
use blstrs::Scalar;
use ff::{Field, PrimeField, PrimeFieldBits};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_update::circuit::{ChallengeProof, PrivateInputs, PublicInputs as CircuitInputs};
use storage_proofs_update::constants::{hs, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams};

use super::gadgets::{
    alloc_num, pack_bits, por_no_challenge_input, poseidon_hash, poseidon_merkle, select, to_bits_le, AuxSink, Bit,
    NodeHash,
};
use crate::compiled::WitnessCs;
use crate::error::{Error, Result};

fn invalid<T>(m: impl std::fmt::Display) -> Result<T> {
    Err(Error::InvalidArgument(format!("native SnapDeals witness: {m}")))
}

fn value(v: Option<Scalar>, what: &str) -> Result<Scalar> {
    v.map_or_else(|| invalid(format!("{what} is missing")), Ok)
}

/// Writes the aux values of `EmptySectorUpdateCircuit { pub_params, pub_inputs, priv_inputs }`
/// into `aux`, and returns its public inputs after the "one" (`k_and_h_select`, `comm_r_old`,
/// `comm_d_new`, `comm_r_new`).
///
/// # Errors
/// [`Error::InvalidArgument`] where the circuit's synthesis fails or asserts: a missing value,
/// a partition index past the partition count, an `h_select` without exactly one bit set,
/// vectors of other lengths than the public parameters say, a `leaf_r_new` other than
/// `leaf_r_old + leaf_d_new · rho`.
pub fn update_circuit_witness<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_params: &PublicParams,
    pub_inputs: &CircuitInputs,
    priv_inputs: &PrivateInputs<TreeR>,
    aux: &mut impl AuxSink,
) -> Result<Vec<Scalar>> {
    let (header, inputs) = Header::write(pub_params, pub_inputs, priv_inputs, aux)?;
    for (c, proof) in priv_inputs.challenge_proofs.iter().enumerate() {
        challenge(aux, &header, c, proof)?;
    }
    Ok(inputs)
}

/// [`update_circuit_witness`] on `threads` threads of the current rayon pool, into `cs`
/// (which holds the "one" input already): the partition's header into `cs`, then the
/// challenges in `threads` runs, each generated into a system of its own and merged into `cs`
/// in order.
///
/// # Errors
/// As [`update_circuit_witness`].
pub fn update_circuit_witness_parallel<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_params: &PublicParams,
    pub_inputs: &CircuitInputs,
    priv_inputs: &PrivateInputs<TreeR>,
    threads: usize,
    cs: &mut WitnessCs,
) -> Result<()> {
    let (header, inputs) = Header::write(pub_params, pub_inputs, priv_inputs, cs)?;
    for v in inputs {
        cs.alloc_input(|| "input", || Ok(v))?;
    }
    let proofs: Vec<(usize, &ChallengeProof<TreeR>)> = priv_inputs.challenge_proofs.iter().enumerate().collect();
    super::in_runs(&proofs, threads, cs, |part, &(c, proof)| {
        challenge(part, &header, c, proof).map(|()| Vec::new())
    })
}

/// The generator the SnapDeals jobs use: the circuit `EmptySectorUpdateCompound::circuit`
/// builds for partition `k` from the public inputs and its vanilla proof, its witness by
/// [`update_circuit_witness_parallel`].
///
/// # Errors
/// As [`update_circuit_witness`], and where `EmptySectorUpdateCompound::circuit` fails.
pub fn update_witness_parallel<TreeR: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_in: &PublicInputs,
    vanilla: &PartitionProof<TreeR>,
    pub_params: &PublicParams,
    k: Option<usize>,
    threads: usize,
    cs: &mut WitnessCs,
) -> Result<()> {
    let circuit =
        <EmptySectorUpdateCompound<TreeR> as CompoundProof<'_, _, _>>::circuit(pub_in, (), vanilla, pub_params, k)
            .map_err(|e| Error::InvalidArgument(format!("native SnapDeals witness: the circuit: {e:#}")))?;
    update_circuit_witness_parallel(
        &circuit.pub_params,
        &circuit.pub_inputs,
        &circuit.priv_inputs,
        threads,
        cs,
    )
}

/// What every challenge of a partition shares.
struct Header {
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
    hs: [usize; 6],
    /// `k`'s bits, least significant first.
    partition_bits: Vec<bool>,
    h_select_bits: Vec<bool>,
    phi: Scalar,
    apex_leafs: Vec<Scalar>,
    /// Per challenge, its generated bits (without the partition's).
    generated: Vec<Vec<bool>>,
}

impl Header {
    fn write<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
        pp: &PublicParams,
        pub_inputs: &CircuitInputs,
        priv_inputs: &PrivateInputs<TreeR>,
        aux: &mut impl AuxSink,
    ) -> Result<(Self, Vec<Scalar>)> {
        let hs = hs(pp.sector_nodes);
        let proofs = &priv_inputs.challenge_proofs;
        let (challenge_bit_len, partition_bit_len) = (pp.challenge_bit_len, pp.partition_bit_len);
        if proofs.len() != pp.challenge_count || priv_inputs.apex_leafs.len() != pp.apex_leaf_count {
            return invalid(format!(
                "{} challenge proofs and {} apex leaves, the public parameters say {} and {}",
                proofs.len(),
                priv_inputs.apex_leafs.len(),
                pp.challenge_count,
                pp.apex_leaf_count
            ));
        }
        if challenge_bit_len < partition_bit_len + pp.apex_leaf_bit_len
            || proofs.iter().any(|p| p.path_d_new.len() != challenge_bit_len)
        {
            return invalid("a challenge's TreeD path is not as long as its challenge bits");
        }
        let partition_path: Vec<Scalar> = proofs[0].path_d_new[challenge_bit_len - partition_bit_len..]
            .iter()
            .map(|siblings| match siblings.as_slice() {
                [s] => value(*s, "a partition path sibling"),
                _ => invalid("a TreeD level without exactly one sibling"),
            })
            .collect::<Result<_>>()?;
        if proofs[1..].iter().any(|p| {
            p.path_d_new[challenge_bit_len - partition_bit_len..]
                != proofs[0].path_d_new[challenge_bit_len - partition_bit_len..]
        }) {
            return invalid("the challenges do not share one partition path");
        }

        // k_and_h_select: public, and its low bits.
        let k_and_h_select = value(pub_inputs.k_and_h_select, "k_and_h_select")?;
        let all_bits: Vec<bool> = k_and_h_select.to_le_bits().into_iter().collect();
        let bit_len = partition_bit_len + hs.len();
        let (partition_bits, h_select_bits) = all_bits[..bit_len].split_at(partition_bit_len);
        let k = partition_bits
            .iter()
            .rev()
            .fold(0usize, |k, &b| (k << 1) | usize::from(b));
        if k >= pp.partition_count {
            return invalid(format!(
                "partition index {k} exceeds the partition count {}",
                pp.partition_count
            ));
        }
        if h_select_bits.iter().filter(|&&b| b).count() != 1 || all_bits[bit_len..].iter().any(|&b| b) {
            return invalid("k_and_h_select's h_select does not have exactly one bit set (or has bits past it)");
        }
        alloc_num(aux, k_and_h_select);
        for &b in &all_bits[..bit_len] {
            aux.push_bit(b);
        }
        let partition_bits_is: Vec<Bit> = partition_bits.iter().map(|&b| Bit::Is(b)).collect();
        let partition = pack_bits(aux, &partition_bits_is);

        let comm_r_old = alloc_num(aux, value(pub_inputs.comm_r_old, "comm_r_old")?);
        let comm_d_new = alloc_num(aux, value(pub_inputs.comm_d_new, "comm_d_new")?);
        let comm_r_new = alloc_num(aux, value(pub_inputs.comm_r_new, "comm_r_new")?);
        let inputs = vec![k_and_h_select, comm_r_old, comm_d_new, comm_r_new];
        let phi = poseidon_hash(aux, &[comm_d_new, comm_r_old], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);

        let comm_c = alloc_num(aux, value(priv_inputs.comm_c, "comm_c")?);
        let root_r_old = alloc_num(aux, value(priv_inputs.root_r_old, "root_r_old")?);
        let root_r_new = alloc_num(aux, value(priv_inputs.root_r_new, "root_r_new")?);
        // The TreeR paths end at these roots (enforced by the gadgets; nothing allocated).
        let apex_leafs = priv_inputs
            .apex_leafs
            .iter()
            .map(|&l| Ok(alloc_num(aux, value(l, "an apex leaf")?)))
            .collect::<Result<Vec<_>>>()?;
        for &s in &partition_path {
            alloc_num(aux, s);
        }
        poseidon_merkle(aux, &[comm_c, root_r_old]);
        poseidon_merkle(aux, &[comm_c, root_r_new]);

        // apex_por: the apex tree, then its root's path to comm_d_new.
        let mut row = apex_leafs.clone();
        while row.len() > 1 {
            row = row.chunks(2).map(|pair| NodeHash::Sha256.hash(aux, pair)).collect();
        }
        let path: Vec<Vec<Scalar>> = partition_path.iter().map(|&s| vec![s]).collect();
        por_no_challenge_input(aux, NodeHash::Sha256, partition_bits, row[0], &path);

        // gen_challenge_bits.
        let per_challenge = challenge_bit_len - partition_bit_len;
        let per_digest = Scalar::CAPACITY as usize / per_challenge;
        let digests = pp.challenge_count.div_ceil(per_digest);
        let mut generated: Vec<Vec<bool>> = Vec::with_capacity(pp.challenge_count);
        for j in 0..digests {
            let index = alloc_num(aux, partition * Scalar::from(digests as u64) + Scalar::from(j as u64));
            let digest = poseidon_hash(aux, &[comm_r_new, index], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);
            let bits: Vec<bool> = to_bits_le(aux, digest).into_iter().map(Bit::value).collect();
            let take = if j == digests - 1 {
                pp.challenge_count - generated.len()
            } else {
                per_digest
            };
            generated.extend(bits.chunks(per_challenge).take(take).map(<[bool]>::to_vec));
        }
        Ok((
            Self {
                challenge_bit_len,
                partition_bit_len,
                apex_leaf_bit_len: pp.apex_leaf_bit_len,
                hs,
                partition_bits: partition_bits.to_vec(),
                h_select_bits: h_select_bits.to_vec(),
                phi,
                apex_leafs,
                generated,
            },
            inputs,
        ))
    }
}

/// Challenge `c` of the partition: its aux values into `aux`.
fn challenge<TreeR: MerkleTreeTrait<Hasher = TreeRHasher>>(
    aux: &mut impl AuxSink,
    h: &Header,
    c: usize,
    proof: &ChallengeProof<TreeR>,
) -> Result<()> {
    let c_bits: Vec<bool> = h.generated[c].iter().chain(&h.partition_bits).copied().collect();
    let bit_len = c_bits.len();

    // get_challenge_high_bits.
    let mut selected = Scalar::ZERO;
    for (&high, &on) in h.hs.iter().zip(&h.h_select_bits) {
        let bits: Vec<Bit> = c_bits[bit_len - high..].iter().map(|&b| Bit::Is(b)).collect();
        let c_high = pack_bits(aux, &bits);
        let or_zero = alloc_num(aux, if on { c_high } else { Scalar::ZERO });
        selected += or_zero;
    }
    let c_high = alloc_num(aux, selected);
    let rho = poseidon_hash(aux, &[h.phi, c_high], &*POSEIDON_CONSTANTS_GEN_RANDOMNESS);

    let leaf_r_old = alloc_num(aux, value(proof.leaf_r_old, "leaf_r_old")?);
    let leaf_d_new = alloc_num(aux, value(proof.leaf_d_new, "leaf_d_new")?);
    let product = alloc_num(aux, leaf_d_new * rho);
    let leaf_r_new = alloc_num(aux, leaf_r_old + product);
    if Some(leaf_r_new) != proof.leaf_r_new {
        return invalid(format!(
            "challenge {c}: leaf_r_new is not leaf_r_old + leaf_d_new · rho"
        ));
    }

    let path_r_old = siblings(&proof.path_r_old, aux)?;
    por_no_challenge_input(aux, NodeHash::Poseidon, &c_bits, leaf_r_old, &path_r_old);
    let path_r_new = siblings(&proof.path_r_new, aux)?;
    por_no_challenge_input(aux, NodeHash::Poseidon, &c_bits, leaf_r_new, &path_r_new);

    let to_apex = h.challenge_bit_len - h.partition_bit_len - h.apex_leaf_bit_len;
    // The apex leaf the TreeD path ends at (the gadget enforces the path's root equals it).
    select(aux, &h.apex_leafs, &c_bits[to_apex..to_apex + h.apex_leaf_bit_len]);
    let path_to_apex: Vec<Vec<Scalar>> = proof.path_d_new[..to_apex]
        .iter()
        .map(|siblings| Ok(vec![alloc_num(aux, value(siblings[0], "a TreeD sibling")?)]))
        .collect::<Result<_>>()?;
    por_no_challenge_input(aux, NodeHash::Sha256, &c_bits[..to_apex], leaf_d_new, &path_to_apex);
    Ok(())
}

/// A TreeR path's siblings, allocated row by row.
fn siblings(path: &[Vec<Option<Scalar>>], aux: &mut impl AuxSink) -> Result<Vec<Vec<Scalar>>> {
    path.iter()
        .map(|row| {
            row.iter()
                .map(|&s| Ok(alloc_num(aux, value(s, "a TreeR sibling")?)))
                .collect()
        })
        .collect()
}
