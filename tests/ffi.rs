//! The C ABI, called from Rust the way a C program calls it: the toy circuit through the
//! R1CS route (dev parameters, prove, verify, bellperson's bytes), the raw route giving the
//! same bytes, and the error paths (NULLs, bad lengths, short buffers, consumed handles).

mod common;

use std::ffi::{c_char, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use cuzk::ffi::assignment::*;
use cuzk::ffi::log::*;
use cuzk::ffi::params::*;
use cuzk::ffi::pool::*;
use cuzk::ffi::prover::*;
use cuzk::ffi::scalar::*;
use cuzk::ffi::status::cuzk_status;
use cuzk::ffi::*;
use cuzk::{Circuit, ConstraintSystem, SynthesisError};
use ff::{Field, PrimeField};

use common::ffi::{call, dev_params, ok, term, toy_assignment, toy_r1cs, toy_witness};

fn le(s: Scalar) -> [u8; 32] {
    s.to_bytes_le()
}

/// The same circuit for bellperson, variables allocated in the same order.
#[derive(Clone)]
struct Toy(u64);

impl Circuit<Scalar> for Toy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (y, [x, x2, x3]) = toy_witness(self.0);
        let yv = cs.alloc_input(|| "y", || Ok(y))?;
        let xv = cs.alloc(|| "x", || Ok(x))?;
        let x2v = cs.alloc(|| "x2", || Ok(x2))?;
        let x3v = cs.alloc(|| "x3", || Ok(x3))?;
        cs.enforce(|| "c0", |lc| lc + xv, |lc| lc + xv, |lc| lc + x2v);
        cs.enforce(|| "c1", |lc| lc + x2v, |lc| lc + xv, |lc| lc + x3v);
        cs.enforce(
            || "c2",
            |lc| lc + x3v + xv + (Scalar::from(5), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + yv,
        );
        Ok(())
    }
}

fn heap_pool() -> *mut cuzk_pool {
    let mut config = cuzk_pool_config_default();
    config.memory = CUZK_POOL_MEMORY_HEAP;
    config.wait_ms = 0;
    let mut pool = null_mut();
    ok(|e| unsafe { cuzk_pool_new(&config, &mut pool, e) });
    pool
}

fn cpu_prover(pool: *const cuzk_pool) -> *mut cuzk_prover {
    let mut prover = null_mut();
    ok(|e| unsafe { cuzk_prover_new(CUZK_BACKEND_CPU, 0, pool, &mut prover, e) });
    prover
}

fn prove_one(
    prover: *const cuzk_prover,
    params: *const cuzk_params,
    asg: *mut cuzk_assignment,
    r: Scalar,
    s: Scalar,
) -> Vec<u8> {
    let mut proof = vec![0u8; CUZK_PROOF_BYTES];
    let mut timings = cuzk_timings::default();
    let (r, s) = (le(r), le(s));
    ok(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            r.as_ptr(),
            s.as_ptr(),
            proof.as_mut_ptr(),
            proof.len(),
            &mut timings,
            e,
        )
    });
    assert!(timings.total_ns > 0);
    proof
}

fn vk_of(params: *const cuzk_params) -> Vec<u8> {
    let mut info = cuzk_params_sizes::default();
    ok(|e| unsafe { cuzk_params_info(params, &mut info, e) });
    let mut vk = vec![0u8; info.verifying_key_bytes as usize];
    let mut written = 0;
    ok(|e| unsafe { cuzk_params_verifying_key(params, vk.as_mut_ptr(), vk.len(), &mut written, e) });
    assert_eq!(written, vk.len());
    vk
}

fn verify(vk: &[u8], proof: &[u8], y: Scalar) -> bool {
    let mut valid = false;
    let y = le(y);
    ok(|e| unsafe {
        cuzk_verify(
            vk.as_ptr(),
            vk.len(),
            proof.as_ptr(),
            proof.len(),
            y.as_ptr(),
            1,
            &mut valid,
            e,
        )
    });
    valid
}

#[test]
fn status_values_are_the_documented_ones() {
    // Part of the ABI: changing one breaks every compiled caller.
    let expected = [
        (cuzk_status::Ok, 0),
        (cuzk_status::Panic, 1),
        (cuzk_status::NullArgument, 2),
        (cuzk_status::BufferTooSmall, 3),
        (cuzk_status::InvalidArgument, 4),
        (cuzk_status::PoolExhausted, 10),
        (cuzk_status::Allocation, 11),
        (cuzk_status::ParamsIo, 20),
        (cuzk_status::ParamsTruncated, 21),
        (cuzk_status::ParamsCorrupt, 22),
        (cuzk_status::UnsafeParameters, 23),
        (cuzk_status::CircuitMismatch, 30),
        (cuzk_status::Synthesis, 31),
        (cuzk_status::MalformedProof, 40),
        (cuzk_status::Cuda, 50),
        (cuzk_status::DeviceLost, 51),
        (cuzk_status::NoGpu, 52),
        (cuzk_status::Filecoin, 60),
        (cuzk_status::Unsupported, 61),
        (cuzk_status::Unknown, 99),
    ];
    for (status, value) in expected {
        assert_eq!(status as i32, value, "{status:?}");
    }
    let lost = cuzk::Error::DeviceLost {
        device: 0,
        code: 700,
        message: "illegal address".into(),
    };
    assert_eq!(cuzk_status::of(&lost), cuzk_status::DeviceLost);
    assert_eq!(cuzk_status::of(&cuzk::Error::NoGpu("none".into())), cuzk_status::NoGpu);
}

#[test]
fn default_pool_config_is_the_documented_one() {
    let c = cuzk_pool_config_default();
    assert_eq!(c.memory, CUZK_POOL_MEMORY_BEST_AVAILABLE);
    assert_eq!(
        (c.max_bytes, c.max_reuse_factor, c.wait_ms, c.allow_fallback),
        (0, 2.0, 60_000, false)
    );
}

#[test]
fn versions() {
    assert_eq!(cuzk_abi_version(), CUZK_ABI_VERSION);
    let v = unsafe { CStr::from_ptr(cuzk_version()) }.to_str().unwrap();
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
}

#[test]
fn toy_circuit_proves_verifies_and_matches_bellperson() {
    let r1cs = toy_r1cs();
    let pool = heap_pool();
    let prover = cpu_prover(pool);
    let params = dev_params(r1cs, 42);

    let mut info = cuzk_params_sizes::default();
    ok(|e| unsafe { cuzk_params_info(params, &mut info, e) });
    assert_eq!((info.num_inputs, info.num_aux, info.domain_size), (2, 3, 8));
    assert_eq!(info.h_len, 7);

    let mut sat = false;
    let (y, aux) = toy_witness(3);
    let aux_bytes: Vec<u8> = aux.iter().flat_map(|s| le(*s)).collect();
    let mut first = 0;
    ok(|e| unsafe { cuzk_r1cs_is_satisfied(r1cs, le(y).as_ptr(), 1, aux_bytes.as_ptr(), 3, &mut sat, &mut first, e) });
    assert!(sat && first == 3);
    let wrong_y = le(y + Scalar::ONE);
    ok(|e| unsafe {
        cuzk_r1cs_is_satisfied(
            r1cs,
            wrong_y.as_ptr(),
            1,
            aux_bytes.as_ptr(),
            3,
            &mut sat,
            &mut first,
            e,
        )
    });
    assert!(!sat && first == 2);

    let mut rng = common::rng("toy");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let proof = prove_one(prover, params, toy_assignment(r1cs, pool, 3), r, s);
    let vk = vk_of(params);
    assert!(verify(&vk, &proof, y));
    assert!(!verify(&vk, &proof, y + Scalar::ONE), "a wrong y verifies");

    // bellperson: same bytes with the same r, s, and its verifier agrees.
    let dir = std::env::temp_dir().join(format!("cuzk-ffi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("toy.params");
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    ok(|e| unsafe { cuzk_params_save(params, cpath.as_ptr(), e) });
    let bp_params = bp::Parameters::<Bls12>::read(&std::fs::read(&path).unwrap()[..], true).unwrap();
    assert_eq!(common::bellperson_proof(Toy(3), &bp_params, r, s), proof);
    assert!(common::bellperson_verifies(&bp_params, &proof, &[y]));

    // The saved file loads back to the same parameters (same verifying key, same proofs).
    let mut loaded = null_mut();
    ok(|e| unsafe { cuzk_params_load(cpath.as_ptr(), CUZK_POINT_CHECK_SUBGROUP, &mut loaded, e) });
    assert_eq!(vk_of(loaded), vk);
    assert_eq!(prove_one(prover, loaded, toy_assignment(r1cs, pool, 3), r, s), proof);

    // Drawn randomness: a different proof that still verifies.
    let asg = toy_assignment(r1cs, null(), 3);
    let mut drawn = vec![0u8; CUZK_PROOF_BYTES];
    ok(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            null(),
            null(),
            drawn.as_mut_ptr(),
            drawn.len(),
            null_mut(),
            e,
        )
    });
    assert_ne!(drawn, proof);
    assert!(verify(&vk, &drawn, y));

    let mut stats = cuzk_pool_statistics::default();
    ok(|e| unsafe { cuzk_pool_stats(pool, &mut stats, e) });
    assert_eq!(stats.bytes_in_use, 0, "every buffer is back after proving");
    assert!(stats.checkouts > 0);
    let mut freed = 0;
    ok(|e| unsafe { cuzk_pool_shrink(pool, 0, &mut freed, e) });
    ok(|e| unsafe { cuzk_pool_stats(pool, &mut stats, e) });
    assert_eq!((stats.bytes_idle, freed > 0), (0, true));

    unsafe {
        cuzk_params_free(loaded);
        cuzk_params_free(params);
        cuzk_prover_free(prover);
        cuzk_pool_free(pool);
        cuzk_r1cs_free(r1cs);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Fills a fresh pool buffer with `values` in memory form.
fn buffer_with(pool: *const cuzk_pool, values: &[Scalar]) -> *mut cuzk_buffer {
    let canonical: Vec<u8> = values.iter().flat_map(|s| le(*s)).collect();
    let (mut buf, mut ptr, mut cap, mut pinned) = (null_mut(), null_mut(), 0usize, true);
    ok(|e| unsafe { cuzk_pool_checkout(pool, canonical.len(), &mut buf, &mut ptr, &mut cap, &mut pinned, e) });
    assert!(cap >= canonical.len() && !pinned);
    ok(|e| unsafe { cuzk_scalars_to_montgomery(canonical.as_ptr(), values.len(), ptr, e) });
    buf
}

#[test]
fn raw_assignment_gives_the_r1cs_route_bytes() {
    let r1cs = toy_r1cs();
    let pool = heap_pool();
    let prover = cpu_prover(pool);
    let params = dev_params(r1cs, 7);
    let (y, [x, x2, x3]) = toy_witness(5);
    let one = Scalar::ONE;
    // Rows: the three constraints, then the input constraints (one, y).
    let a = [x, x2, x3 + x + Scalar::from(5), one, y];
    let b = [x, x, one, Scalar::ZERO, Scalar::ZERO];
    let c = [x2, x3, y, Scalar::ZERO, Scalar::ZERO];
    let aux: Vec<u8> = [x, x2, x3].iter().flat_map(|s| le(*s)).collect();
    let public = le(y);
    // A over aux: x, x², x³ all appear; B over inputs: the one (row 2); B over aux: x.
    let (a_aux, b_in, b_aux) = (0b111u64, 0b01u64, 0b001u64);
    let raw = cuzk_raw_assignment {
        a: buffer_with(pool, &a),
        b: buffer_with(pool, &b),
        c: buffer_with(pool, &c),
        num_constraints: 5,
        public_inputs: public.as_ptr(),
        num_public: 1,
        aux: aux.as_ptr(),
        num_aux: 3,
        a_aux_density: &a_aux,
        b_input_density: &b_in,
        b_aux_density: &b_aux,
    };
    let mut asg = null_mut();
    let mut before = cuzk_pool_statistics::default();
    ok(|e| unsafe { cuzk_pool_stats(pool, &mut before, e) });
    ok(|e| unsafe { cuzk_assignment_new_raw(&raw, &mut asg, e) });
    let mut after = cuzk_pool_statistics::default();
    ok(|e| unsafe { cuzk_pool_stats(pool, &mut after, e) });
    // The three buffers become a/b/c as they are: the only new checkout is the aux vector.
    assert_eq!(after.checkouts, before.checkouts + 1, "a/b/c were copied, not moved");
    let (r, s) = (Scalar::from(11), Scalar::from(13));
    let raw_proof = prove_one(prover, params, asg, r, s);
    let r1cs_proof = prove_one(prover, params, toy_assignment(r1cs, pool, 5), r, s);
    assert_eq!(raw_proof, r1cs_proof);
    assert!(verify(&vk_of(params), &raw_proof, y));

    // A wrong input row is caught, and the buffers are consumed anyway (none left in use).
    let mut bad_a = a;
    bad_a[4] += one;
    let raw = cuzk_raw_assignment {
        a: buffer_with(pool, &bad_a),
        b: buffer_with(pool, &b),
        c: buffer_with(pool, &c),
        ..raw
    };
    let (status, msg) = call(|e| unsafe { cuzk_assignment_new_raw(&raw, &mut asg, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(msg.contains("input constraint"), "{msg}");
    // The same buffer twice: refused, freed once.
    let same = buffer_with(pool, &a);
    let raw = cuzk_raw_assignment {
        a: same,
        b: same,
        c: buffer_with(pool, &c),
        ..raw
    };
    let (status, _) = call(|e| unsafe { cuzk_assignment_new_raw(&raw, &mut asg, e) });
    assert_eq!(status, cuzk_status::InvalidArgument);
    let mut stats = cuzk_pool_statistics::default();
    ok(|e| unsafe { cuzk_pool_stats(pool, &mut stats, e) });
    assert_eq!(stats.bytes_in_use, 0);

    unsafe {
        cuzk_params_free(params);
        cuzk_prover_free(prover);
        cuzk_pool_free(pool);
        cuzk_r1cs_free(r1cs);
    }
}

#[test]
fn montgomery_conversion_round_trips_in_place() {
    let values = [Scalar::ONE, Scalar::from(5), -Scalar::ONE, Scalar::ROOT_OF_UNITY];
    let mut bytes: Vec<u8> = values.iter().flat_map(|s| le(*s)).collect();
    let original = bytes.clone();
    let p = bytes.as_mut_ptr();
    ok(|e| unsafe { cuzk_scalars_to_montgomery(p, 4, p, e) });
    // Montgomery form of 1 is 2^256 mod r, not 1.
    assert_ne!(bytes, original);
    ok(|e| unsafe { cuzk_scalars_from_montgomery(p, 4, p, e) });
    assert_eq!(bytes, original);
    // The modulus itself is not canonical; nothing is written then.
    let mut modulus = [0u8; 32];
    modulus.copy_from_slice(&le(-Scalar::ONE));
    modulus[0] += 1;
    let mut out = [7u8; 32];
    let (status, msg) = call(|e| unsafe { cuzk_scalars_to_montgomery(modulus.as_ptr(), 1, out.as_mut_ptr(), e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert_eq!(out, [7u8; 32]);
    let mut neg = [0u8; 32];
    assert_eq!(unsafe { cuzk_scalar_from_i64(-3, neg.as_mut_ptr()) }, cuzk_status::Ok);
    assert_eq!(neg, le(-Scalar::from(3)));
}

#[test]
fn bad_arguments_are_errors_not_crashes() {
    let r1cs = toy_r1cs();
    let prover = cpu_prover(null());
    let params = dev_params(r1cs, 1);
    let mut out = null_mut();

    // NULLs are named.
    let (status, msg) = call(|e| unsafe { cuzk_params_generate_insecure_for_development(null(), 1, &mut out, e) });
    assert_eq!(status, cuzk_status::NullArgument);
    assert!(msg.contains("r1cs"), "{msg}");
    assert!(out.is_null(), "out-parameters are written only on success");
    let (status, _) = call(|e| unsafe { cuzk_params_load(null(), CUZK_POINT_CHECK_ON_CURVE, &mut out, e) });
    assert_eq!(status, cuzk_status::NullArgument);
    // An error status without a message buffer is still a status.
    assert_eq!(
        unsafe { cuzk_pool_new(null(), null_mut(), null_mut()) },
        cuzk_status::NullArgument
    );

    // Wrong witness counts.
    let y = le(Scalar::from(35));
    let mut asg = null_mut();
    let (status, msg) =
        call(|e| unsafe { cuzk_assignment_new_r1cs(r1cs, null(), y.as_ptr(), 1, null(), 0, &mut asg, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    // A term naming a variable that does not exist.
    let bad = [term(0, 9, 1)];
    let mut r2 = null_mut();
    let (status, msg) = call(|e| unsafe { cuzk_r1cs_new(1, 3, 1, bad.as_ptr(), 1, null(), 0, null(), 0, &mut r2, e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "{msg}");
    assert!(r2.is_null());

    // Short output buffers.
    let mut small = [0u8; 10];
    let (status, msg) = call(|e| unsafe { cuzk_params_verifying_key(params, small.as_mut_ptr(), 10, null_mut(), e) });
    assert_eq!(status, cuzk_status::BufferTooSmall, "{msg}");
    let asg = toy_assignment(r1cs, null(), 3);
    let (status, _) = call(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            null(),
            null(),
            small.as_mut_ptr(),
            10,
            null_mut(),
            e,
        )
    });
    assert_eq!(status, cuzk_status::BufferTooSmall);
    // (`asg` was consumed by the failed call.)

    // Only one of r, s; an assignment twice in a batch.
    let mut proofs = vec![0u8; 2 * CUZK_PROOF_BYTES];
    let asg = toy_assignment(r1cs, null(), 3);
    let r = le(Scalar::ONE);
    let (status, _) = call(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            r.as_ptr(),
            null(),
            proofs.as_mut_ptr(),
            proofs.len(),
            null_mut(),
            e,
        )
    });
    assert_eq!(status, cuzk_status::InvalidArgument);
    let asg = toy_assignment(r1cs, null(), 3);
    let twice = [asg, asg];
    let (status, _) = call(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            twice.as_ptr(),
            2,
            null(),
            null(),
            proofs.as_mut_ptr(),
            proofs.len(),
            null_mut(),
            e,
        )
    });
    assert_eq!(status, cuzk_status::InvalidArgument);
    let (status, _) = call(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            null(),
            1,
            null(),
            null(),
            proofs.as_mut_ptr(),
            proofs.len(),
            null_mut(),
            e,
        )
    });
    assert_eq!(status, cuzk_status::NullArgument);

    // Parameters of another circuit: a mismatch.
    let other = Scalar::from(2);
    let a = [term(0, 1, 1)];
    let b = [term(0, 0, 1)];
    let c = [term(0, 2, 1)];
    let mut small_r1cs = null_mut();
    ok(|e| unsafe { cuzk_r1cs_new(1, 1, 1, a.as_ptr(), 1, b.as_ptr(), 1, c.as_ptr(), 1, &mut small_r1cs, e) });
    let mut asg = null_mut();
    let w = le(other);
    ok(|e| unsafe { cuzk_assignment_new_r1cs(small_r1cs, null(), w.as_ptr(), 1, w.as_ptr(), 1, &mut asg, e) });
    let (status, msg) = call(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            null(),
            null(),
            proofs.as_mut_ptr(),
            proofs.len(),
            null_mut(),
            e,
        )
    });
    assert_eq!(status, cuzk_status::CircuitMismatch, "{msg}");

    // Verification: wrong number of inputs, malformed proof.
    let vk = vk_of(params);
    let mut valid = true;
    let (status, _) =
        call(|e| unsafe { cuzk_verify(vk.as_ptr(), vk.len(), proofs.as_ptr(), 192, null(), 0, &mut valid, e) });
    assert_eq!(status, cuzk_status::MalformedProof);
    let asg = toy_assignment(r1cs, null(), 3);
    ok(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            null(),
            null(),
            proofs.as_mut_ptr(),
            192,
            null_mut(),
            e,
        )
    });
    let (status, _) =
        call(|e| unsafe { cuzk_verify(vk.as_ptr(), vk.len(), proofs.as_ptr(), 192, null(), 0, &mut valid, e) });
    assert_eq!(status, cuzk_status::InvalidArgument);
    assert!(valid, "out_valid untouched on failure");

    // Corrupted and missing parameter files.
    let dir = std::env::temp_dir().join(format!("cuzk-ffi-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p");
    let cpath = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    ok(|e| unsafe { cuzk_params_save(params, cpath.as_ptr(), e) });
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 5);
    std::fs::write(&path, &bytes).unwrap();
    let mut loaded = null_mut();
    let (status, _) = call(|e| unsafe { cuzk_params_load(cpath.as_ptr(), CUZK_POINT_CHECK_ON_CURVE, &mut loaded, e) });
    assert_eq!(status, cuzk_status::ParamsTruncated);
    bytes[10] ^= 0xff;
    bytes.extend_from_slice(&[0; 5]);
    std::fs::write(&path, &bytes).unwrap();
    let (status, _) = call(|e| unsafe { cuzk_params_load(cpath.as_ptr(), CUZK_POINT_CHECK_ON_CURVE, &mut loaded, e) });
    assert_eq!(status, cuzk_status::ParamsCorrupt);
    // δ at infinity (a subverted setup) is refused at load. bellperson's layout: α₁ β₁ β₂ γ₂
    // δ₁ δ₂ (uncompressed: 96 / 192 bytes); infinity is the flag 0x40 and zeros.
    ok(|e| unsafe { cuzk_params_save(params, cpath.as_ptr(), e) });
    let good = std::fs::read(&path).unwrap();
    for (offset, len) in [(96 + 96 + 192 + 192, 96), (96 + 96 + 192 + 192 + 96, 192)] {
        let mut bytes = good.clone();
        bytes[offset..offset + len].fill(0);
        bytes[offset] = 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let (status, msg) =
            call(|e| unsafe { cuzk_params_load(cpath.as_ptr(), CUZK_POINT_CHECK_ON_CURVE, &mut loaded, e) });
        assert_eq!(status, cuzk_status::UnsafeParameters, "{msg}");
        assert!(msg.contains("delta"), "{msg}");
        assert!(loaded.is_null());
    }
    let missing = std::ffi::CString::new(dir.join("missing").to_str().unwrap()).unwrap();
    let (status, _) =
        call(|e| unsafe { cuzk_params_load(missing.as_ptr(), CUZK_POINT_CHECK_ON_CURVE, &mut loaded, e) });
    assert_eq!(status, cuzk_status::ParamsIo);
    assert!(loaded.is_null());
    // A save that cannot write says so (not "cannot read"), naming the file.
    let dir_c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    let mut targets = vec![dir_c];
    if std::path::Path::new("/dev/full").exists() {
        targets.push(std::ffi::CString::new("/dev/full").unwrap());
    }
    for target in &targets {
        let (status, msg) = call(|e| unsafe { cuzk_params_save(params, target.as_ptr(), e) });
        assert_eq!(status, cuzk_status::ParamsIo, "{msg}");
        let name = target.to_str().unwrap();
        assert!(
            msg.starts_with(&format!("cannot write parameters to {name}: ")),
            "{msg}"
        );
    }
    std::fs::remove_dir_all(dir).ok();

    // A GPU from a build without CUDA is NO_GPU (with CUDA and no GPU, too).
    if !cfg!(feature = "cuda") {
        let mut p = null_mut();
        let (status, _) = call(|e| unsafe { cuzk_prover_new(CUZK_BACKEND_GPU, 0, null(), &mut p, e) });
        assert_eq!(status, cuzk_status::NoGpu);
    }

    // A pool at its cap: POOL_EXHAUSTED; a nonsensical reuse factor: INVALID_ARGUMENT.
    let mut config = cuzk_pool_config_default();
    config.memory = CUZK_POOL_MEMORY_HEAP;
    config.max_bytes = 1 << 16;
    config.wait_ms = 0;
    let mut capped = null_mut();
    ok(|e| unsafe { cuzk_pool_new(&config, &mut capped, e) });
    let (mut buf, mut ptr) = (null_mut(), null_mut());
    let (status, msg) =
        call(|e| unsafe { cuzk_pool_checkout(capped, 1 << 20, &mut buf, &mut ptr, null_mut(), null_mut(), e) });
    assert_eq!(status, cuzk_status::PoolExhausted, "{msg}");
    assert!(buf.is_null() && ptr.is_null());
    config.max_reuse_factor = 0.5;
    let mut p2 = null_mut();
    let (status, _) = call(|e| unsafe { cuzk_pool_new(&config, &mut p2, e) });
    assert_eq!(status, cuzk_status::InvalidArgument);
    unsafe { cuzk_pool_free(capped) };

    // Frees accept NULL.
    unsafe {
        cuzk_pool_free(null_mut());
        cuzk_params_free(null_mut());
        cuzk_r1cs_free(null_mut());
        cuzk_assignment_free(null_mut());
        cuzk_prover_free(null_mut());
        cuzk_buffer_checkin(null_mut());
        cuzk_string_free(null_mut());
        cuzk_r1cs_free(small_r1cs);
        cuzk_params_free(params);
        cuzk_prover_free(prover);
        cuzk_r1cs_free(r1cs);
    }
}

static RECORDS: Mutex<Vec<(cuzk_log_level, String, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn collect(user: *mut c_void, level: cuzk_log_level, target: *const c_char, msg: *const c_char) {
    assert_eq!(user as usize, 0x1234);
    let s = |p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    RECORDS.lock().unwrap().push((level, s(target), s(msg)));
}

#[test]
fn log_records_reach_the_callback() {
    ok(|e| unsafe { cuzk_set_log_callback(Some(collect), 0x1234 as *mut c_void, CUZK_LOG_LEVEL_WARN, e) });
    let r1cs = toy_r1cs();
    let params = dev_params(r1cs, 3);
    // The best-available pool warns when its memory is not pinned (a build without CUDA, or
    // no usable GPU).
    let mut pool = null_mut();
    ok(|e| unsafe { cuzk_pool_new(&cuzk_pool_config_default(), &mut pool, e) });
    let (mut buffer, mut ptr, mut pinned) = (null_mut(), null_mut(), true);
    ok(|e| unsafe { cuzk_pool_checkout(pool, 4096, &mut buffer, &mut ptr, null_mut(), &mut pinned, e) });
    unsafe {
        cuzk_buffer_checkin(buffer);
        cuzk_pool_free(pool);
    }
    ok(|e| unsafe { cuzk_set_log_callback(None, null_mut(), CUZK_LOG_LEVEL_TRACE, e) });
    let got = RECORDS.lock().unwrap().clone();
    assert!(
        got.iter()
            .any(|(l, t, m)| *l == CUZK_LOG_LEVEL_WARN && t.starts_with("cuzk") && m.contains("INSECURE")),
        "{got:?}"
    );
    let pool_warned = got
        .iter()
        .any(|(l, _, m)| *l == CUZK_LOG_LEVEL_WARN && m.contains("pinned pool") && m.contains("unpinned heap memory"));
    assert_eq!(
        pool_warned, !pinned,
        "the best-available pool warns exactly when it falls back to unpinned memory: {got:?}"
    );
    // After unsetting, nothing more arrives.
    let n = got.len();
    unsafe { cuzk_params_free(dev_params(r1cs, 4)) };
    assert_eq!(RECORDS.lock().unwrap().len(), n);
    unsafe {
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}

/// The toy proof for x = 3 under dev parameters from seed 42 with r = 11, s = 13. The Go
/// package's test (examples/go) checks its raw and R1CS routes against these same bytes.
const TOY_GOLDEN_PROOF: &str = concat!(
    "84af86e7e877f02092e1cf5ea44d9f7f53219db213cb0e11f6aaa5e417a23bd8bf27ef407d3a6dbdd4bbecb272a2bd7cb7471c639d6387435c7853bc40d196e1",
    "1f774e308bc22abc53c81a1a84b77ced25020f1847423eebbc1f81695d23ca6c12ee33238479d4870f4733c34182f447584c9bfe079e07c5bc4c64fa868e36bb",
    "7bceca2b687919faa5985806fc35920db556602de14c1f8dd5995f814be2d78a0a3df75970e31df4f7aac655e78c8b74fcff2c6934297bf81866d6e44a6ab2bf",
);

#[test]
fn toy_proof_bytes_are_pinned() {
    let r1cs = toy_r1cs();
    let params = dev_params(r1cs, 42);
    let prover = cpu_prover(null());
    let proof = prove_one(
        prover,
        params,
        toy_assignment(r1cs, null(), 3),
        Scalar::from(11),
        Scalar::from(13),
    );
    let hex: String = proof.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, TOY_GOLDEN_PROOF);
    unsafe {
        cuzk_prover_free(prover);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}

#[test]
fn circuit_without_constraints_proves_with_its_own_parameters() {
    // No inputs, no aux, no constraints: the setup and the prover agree on a domain of one
    // point (bellperson's, too: tests/bellperson_compat.rs).
    let mut r1cs = null_mut();
    ok(|e| unsafe { cuzk_r1cs_new(0, 0, 0, null(), 0, null(), 0, null(), 0, &mut r1cs, e) });
    let params = dev_params(r1cs, 11);
    let mut info = cuzk_params_sizes::default();
    ok(|e| unsafe { cuzk_params_info(params, &mut info, e) });
    assert_eq!(info.domain_size, 1);
    let pool = heap_pool();
    let prover = cpu_prover(pool);
    let mut asg = null_mut();
    ok(|e| unsafe { cuzk_assignment_new_r1cs(r1cs, pool, null(), 0, null(), 0, &mut asg, e) });
    let mut proof = vec![0u8; CUZK_PROOF_BYTES];
    ok(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            &asg,
            1,
            null(),
            null(),
            proof.as_mut_ptr(),
            proof.len(),
            null_mut(),
            e,
        )
    });
    let vk = vk_of(params);
    let mut valid = false;
    ok(|e| unsafe {
        cuzk_verify(
            vk.as_ptr(),
            vk.len(),
            proof.as_ptr(),
            proof.len(),
            null(),
            0,
            &mut valid,
            e,
        )
    });
    assert!(valid, "the empty circuit's proof verifies");
    unsafe {
        cuzk_prover_free(prover);
        cuzk_pool_free(pool);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}
