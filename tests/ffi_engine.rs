//! The engine through the C ABI, called from Rust the way a C program calls it: a job of R1CS
//! assignments made in the engine's pool gives `cuzk_prove`'s bytes; progress (polled and by
//! callback), statistics, cancel-on-free, a second wait, short buffers and bad arguments.

mod common;

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use blstrs::Scalar;
use cuzk::ffi::assignment::*;
use cuzk::ffi::engine::*;
use cuzk::ffi::params::*;
use cuzk::ffi::pool::*;
use cuzk::ffi::prover::*;
use cuzk::ffi::status::cuzk_status;
use ff::Field;

use common::ffi::{call, dev_params, ok, term, toy_assignment, toy_r1cs};

fn scalars(n: usize, seed: u64) -> Vec<u8> {
    (0..n as u64)
        .flat_map(|i| (Scalar::from(seed * 1000 + i + 1).square() + Scalar::from(7)).to_bytes_le())
        .collect()
}

fn cpu_engine() -> *mut cuzk_engine {
    let mut config = cuzk_engine_config_default();
    assert_eq!(
        (config.backend, config.pacer, config.budget_bytes),
        (CUZK_BACKEND_AUTO, CUZK_PACER_MODE_PI, 0)
    );
    config.backend = CUZK_BACKEND_CPU;
    config.memory = CUZK_POOL_MEMORY_HEAP;
    config.synthesis_workers = 1;
    config.budget_bytes = 1 << 30;
    let mut engine = null_mut();
    ok(|e| unsafe { cuzk_engine_new(&config, &mut engine, e) });
    engine
}

/// The toy circuit, its parameters, a CPU engine and the engine's pool.
fn toy_engine() -> (*mut cuzk_r1cs, *mut cuzk_params, *mut cuzk_engine, *mut cuzk_pool) {
    let r1cs = toy_r1cs();
    let params = dev_params(r1cs, 3);
    let engine = cpu_engine();
    let mut pool = null_mut();
    ok(|e| unsafe { cuzk_engine_pool(engine, &mut pool, e) });
    (r1cs, params, engine, pool)
}

/// A one-constraint system (x * x = y) and an assignment of it (x = 3) that does not match the
/// toy parameters: a job over it fails at wait. The caller frees the system.
fn mismatched_assignment() -> (*mut cuzk_r1cs, *mut cuzk_assignment) {
    let a = [term(0, 2, 1)];
    let b = [term(0, 2, 1)];
    let c = [term(0, 1, 1)];
    let mut r1cs = null_mut();
    ok(|e| unsafe { cuzk_r1cs_new(1, 1, 1, a.as_ptr(), 1, b.as_ptr(), 1, c.as_ptr(), 1, &mut r1cs, e) });
    let x = Scalar::from(3u64);
    let (public, aux) = ((x * x).to_bytes_le(), x.to_bytes_le());
    let mut asg = null_mut();
    ok(|e| unsafe { cuzk_assignment_new_r1cs(r1cs, null(), public.as_ptr(), 1, aux.as_ptr(), 1, &mut asg, e) });
    (r1cs, asg)
}

fn stats(engine: *const cuzk_engine) -> cuzk_engine_statistics {
    let mut s = cuzk_engine_statistics::default();
    ok(|e| unsafe { cuzk_engine_stats(engine, &mut s, e) });
    s
}

#[test]
fn a_job_of_assignments_gives_cuzk_proves_bytes() {
    let (r1cs, params, engine, pool) = toy_engine();

    let n = 4;
    let (r, s) = (scalars(n, 1), scalars(n, 2));
    let assignments: Vec<_> = (0..n as u64).map(|x| toy_assignment(r1cs, pool, x + 3)).collect();
    let mut job = null_mut();
    ok(|e| unsafe {
        cuzk_engine_submit(
            engine,
            params,
            assignments.as_ptr(),
            n,
            r.as_ptr(),
            s.as_ptr(),
            0,
            &mut job,
            e,
        )
    });
    // A buffer too small is refused before waiting, and the result stays.
    let mut proofs = vec![0u8; n * CUZK_PROOF_BYTES];
    let (status, _) = call(|e| unsafe { cuzk_job_wait(job, proofs.as_mut_ptr(), proofs.len() - 1, e) });
    assert_eq!(status, cuzk_status::BufferTooSmall);
    ok(|e| unsafe { cuzk_job_wait(job, proofs.as_mut_ptr(), proofs.len(), e) });
    let (status, _) = call(|e| unsafe { cuzk_job_wait(job, proofs.as_mut_ptr(), proofs.len(), e) });
    assert_eq!(status, cuzk_status::InvalidArgument, "the result is taken once");
    let (mut done, mut total, mut finished) = (0, 0, false);
    ok(|e| unsafe { cuzk_job_progress(job, &mut done, &mut total, &mut finished, e) });
    assert_eq!((done, total, finished), (n as u64, n as u64, true));
    assert!(!unsafe { cuzk_job_cancel(job) });
    unsafe { cuzk_job_free(job) };

    // The plain prover's bytes, same assignments, same r and s.
    let mut prover = null_mut();
    ok(|e| unsafe { cuzk_prover_new(CUZK_BACKEND_CPU, 0, null(), &mut prover, e) });
    let assignments: Vec<_> = (0..n as u64).map(|x| toy_assignment(r1cs, null(), x + 3)).collect();
    let mut expected = vec![0u8; n * CUZK_PROOF_BYTES];
    ok(|e| unsafe {
        cuzk_prove(
            prover,
            params,
            assignments.as_ptr(),
            n,
            r.as_ptr(),
            s.as_ptr(),
            expected.as_mut_ptr(),
            expected.len(),
            null_mut(),
            e,
        )
    });
    assert_eq!(proofs, expected);

    let st = stats(engine);
    assert_eq!((st.partitions_done, st.jobs_done, st.jobs_active), (n as u64, 1, 0));
    assert_eq!(st.budget_limit, 1 << 30);
    assert_eq!(
        (st.params_sets, st.budget_used),
        (1, st.params_host_bytes),
        "only the held parameters"
    );
    assert!(st.params_host_bytes > 0);
    assert_eq!((st.synthesis_reserved, st.params_device_bytes), (0, 0));
    assert_eq!((st.evicted_params, st.evicted_pool_bytes, st.budget_waits), (0, 0, 0));
    assert_eq!((st.gpu_workers, st.gpu_workers_lost), (1, 0));
    assert!(st.gpu_busy_fraction > 0.0 && st.gpu_busy_fraction <= 1.0);
    assert!(st.gpu_ema_ns > 0);
    assert_eq!(st.pool.bytes_in_use, 0);
    assert!(
        st.pool.checkouts >= 4 * n as u64,
        "the assignments were made in the engine's pool"
    );

    unsafe {
        cuzk_prover_free(prover);
        cuzk_pool_free(pool);
        cuzk_engine_free(engine);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}

#[test]
fn bad_arguments_and_freed_engines() {
    let r1cs = toy_r1cs();
    let params = dev_params(r1cs, 3);
    let engine = cpu_engine();
    let mut job = null_mut();

    // Empty job, r without s, NULL engine: errors, the assignments consumed either way.
    let (status, _) =
        call(|e| unsafe { cuzk_engine_submit(engine, params, null(), 0, null(), null(), 0, &mut job, e) });
    assert_eq!(status, cuzk_status::InvalidArgument);
    let a = [toy_assignment(r1cs, null(), 2)];
    let r = scalars(1, 3);
    let (status, _) =
        call(|e| unsafe { cuzk_engine_submit(engine, params, a.as_ptr(), 1, r.as_ptr(), null(), 0, &mut job, e) });
    assert_eq!(status, cuzk_status::InvalidArgument);
    let a = [toy_assignment(r1cs, null(), 2)];
    let (status, _) =
        call(|e| unsafe { cuzk_engine_submit(null(), params, a.as_ptr(), 1, null(), null(), 0, &mut job, e) });
    assert_eq!(status, cuzk_status::NullArgument);
    assert!(job.is_null(), "out-parameters are written only on success");
    let (status, _) = call(|e| unsafe { cuzk_engine_new(null(), &mut null_mut(), e) });
    assert_eq!(status, cuzk_status::NullArgument);
    let mut bad = cuzk_engine_config_default();
    bad.backend = CUZK_BACKEND_CPU;
    bad.pacer = CUZK_PACER_MODE_BOUNDED_QUEUE;
    bad.budget_bytes = 1 << 20;
    bad.memory = CUZK_POOL_MEMORY_HEAP;
    let mut e2 = null_mut();
    ok(|e| unsafe { cuzk_engine_new(&bad, &mut e2, e) });

    // A job whose circuit does not match its parameters fails at wait with its status.
    let (other, asg) = mismatched_assignment();
    ok(|e| unsafe { cuzk_engine_submit(e2, params, &asg, 1, null(), null(), 0, &mut job, e) });
    let mut proof = vec![0u8; CUZK_PROOF_BYTES];
    let (status, _) = call(|e| unsafe { cuzk_job_wait(job, proof.as_mut_ptr(), proof.len(), e) });
    assert_eq!(status, cuzk_status::CircuitMismatch);
    unsafe { cuzk_job_free(job) };

    // Freeing the engine ends its jobs; their handles stay usable.
    unsafe { cuzk_engine_free(e2) };
    unsafe { cuzk_engine_free(null_mut()) };
    unsafe { cuzk_job_free(null_mut()) };
    assert!(!unsafe { cuzk_job_cancel(null()) });
    let (status, _) = call(|e| unsafe { cuzk_engine_stats(engine, null_mut(), e) });
    assert_eq!(status, cuzk_status::NullArgument);
    assert_eq!(
        cuzk_status::of(&cuzk::Error::Cancelled("x".into())),
        cuzk_status::Cancelled
    );
    assert_eq!(cuzk_status::Cancelled as i32, 70);
    assert_eq!(cuzk_status::BudgetExhausted as i32, 71);
    unsafe {
        cuzk_engine_free(engine);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
        cuzk_r1cs_free(other);
    }
}

/// One progress callback call: job id, done, failed, total, finished.
type Call = (u64, u64, u64, u64, bool);

/// Records each call in the `Mutex<Vec<Call>>` behind `user_data`.
unsafe extern "C" fn record(user_data: *mut c_void, job: u64, done: u64, failed: u64, total: u64, finished: bool) {
    // SAFETY: the tests pass a live `Mutex<Vec<Call>>` that outlives the job.
    let calls = unsafe { &*(user_data as *const Mutex<Vec<Call>>) };
    calls.lock().unwrap().push((job, done, failed, total, finished));
}

/// Asserts the calls count up to the end: done never decreasing, and one last call with
/// `finished` saying how every partition ended.
fn check_calls(calls: &Mutex<Vec<Call>>, done: u64, failed: u64, total: u64) -> u64 {
    let calls = calls.lock().unwrap().clone();
    let last = *calls.last().expect("at least the final call");
    assert_eq!(
        (last.1, last.2, last.3, last.4),
        (done, failed, total, true),
        "{calls:?}"
    );
    assert_eq!(calls.iter().filter(|c| c.4).count(), 1, "one final call: {calls:?}");
    assert!(calls.iter().all(|c| c.0 == last.0 && c.3 == total), "{calls:?}");
    assert!(
        calls.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].2 <= w[1].2),
        "{calls:?}"
    );
    last.0
}

#[test]
fn a_progress_callback_sees_every_partition_finish() {
    let (r1cs, params, engine, pool) = toy_engine();

    // Registered right after the submission: it sees the proofs after that, then the end.
    let n = 5;
    let calls = Mutex::new(Vec::<Call>::new());
    let user_data = &calls as *const Mutex<Vec<Call>> as *mut c_void;
    let assignments: Vec<_> = (0..n as u64).map(|x| toy_assignment(r1cs, pool, x + 3)).collect();
    let mut job = null_mut();
    ok(|e| unsafe { cuzk_engine_submit(engine, params, assignments.as_ptr(), n, null(), null(), 0, &mut job, e) });
    ok(|e| unsafe { cuzk_job_on_progress(job, Some(record), user_data, e) });
    let mut proofs = vec![0u8; n * CUZK_PROOF_BYTES];
    ok(|e| unsafe { cuzk_job_wait(job, proofs.as_mut_ptr(), proofs.len(), e) });
    let first = check_calls(&calls, n as u64, 0, n as u64);
    // Registered after the wait: the job is over, so one call, now, with the final counts.
    let late = Mutex::new(Vec::<Call>::new());
    let late_data = &late as *const Mutex<Vec<Call>> as *mut c_void;
    ok(|e| unsafe { cuzk_job_on_progress(job, Some(record), late_data, e) });
    assert_eq!(*late.lock().unwrap(), [(first, n as u64, 0, n as u64, true)]);
    unsafe { cuzk_job_free(job) };

    // A failing job: the final call counts its partition as failed.
    let (other, asg) = mismatched_assignment();
    let failing_calls = Mutex::new(Vec::<Call>::new());
    let failing_data = &failing_calls as *const Mutex<Vec<Call>> as *mut c_void;
    ok(|e| unsafe { cuzk_engine_submit(engine, params, &asg, 1, null(), null(), 0, &mut job, e) });
    ok(|e| unsafe { cuzk_job_on_progress(job, Some(record), failing_data, e) });
    let mut proof = vec![0u8; CUZK_PROOF_BYTES];
    let (status, _) = call(|e| unsafe { cuzk_job_wait(job, proof.as_mut_ptr(), proof.len(), e) });
    assert_eq!(status, cuzk_status::CircuitMismatch);
    let second = check_calls(&failing_calls, 0, 1, 1);
    assert!(second > first, "job ids increase");
    unsafe { cuzk_job_free(job) };

    // Removed (NULL) before the job runs: never called. Then a NULL job is refused.
    let quiet = Mutex::new(Vec::<Call>::new());
    let quiet_data = &quiet as *const Mutex<Vec<Call>> as *mut c_void;
    let a = [toy_assignment(r1cs, pool, 4)];
    ok(|e| unsafe { cuzk_engine_submit(engine, params, a.as_ptr(), 1, null(), null(), 0, &mut job, e) });
    ok(|e| unsafe { cuzk_job_on_progress(job, None, quiet_data, e) });
    ok(|e| unsafe { cuzk_job_wait(job, proof.as_mut_ptr(), proof.len(), e) });
    unsafe { cuzk_job_free(job) };
    assert!(quiet.lock().unwrap().is_empty());
    let (status, _) = call(|e| unsafe { cuzk_job_on_progress(null(), Some(record), quiet_data, e) });
    assert_eq!(status, cuzk_status::NullArgument);

    unsafe {
        cuzk_pool_free(pool);
        cuzk_engine_free(engine);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
        cuzk_r1cs_free(other);
    }
}

/// A thread blocked in `cuzk_job_wait` does not hide the job from the others: another thread
/// polls its progress (not over) and cancels it, and the wait returns the cancellation.
#[test]
fn a_job_under_wait_can_be_cancelled_and_watched() {
    let (r1cs, params, engine, pool) = toy_engine();
    let submit = |n: usize, priority: i32| {
        let assignments: Vec<_> = (0..n as u64).map(|x| toy_assignment(r1cs, pool, x + 3)).collect();
        let mut job = null_mut();
        ok(|e| unsafe {
            cuzk_engine_submit(
                engine,
                params,
                assignments.as_ptr(),
                n,
                null(),
                null(),
                priority,
                &mut job,
                e,
            )
        });
        job
    };
    // A long job in front (one GPU worker), then the one we wait for, behind it.
    let long = submit(400, 1);
    let behind = submit(2, 0);
    struct Job(*mut cuzk_job);
    // SAFETY: the ABI's job calls are thread-safe; the handle outlives the thread (joined below).
    unsafe impl Send for Job {}
    let waiter = {
        let job = Job(behind);
        std::thread::spawn(move || {
            let job = job;
            let mut proofs = vec![0u8; 2 * CUZK_PROOF_BYTES];
            call(|e| unsafe { cuzk_job_wait(job.0, proofs.as_mut_ptr(), proofs.len(), e) })
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(50)); // the waiter blocks by now
    let (mut done, mut total, mut finished) = (0, 0, true);
    ok(|e| unsafe { cuzk_job_progress(behind, &mut done, &mut total, &mut finished, e) });
    assert_eq!(
        (done, total, finished),
        (0, 2, false),
        "still queued behind the long job"
    );
    assert!(unsafe { cuzk_job_cancel(behind) }, "cancel reaches a job under wait");
    let (status, msg) = waiter.join().unwrap();
    assert_eq!(status, cuzk_status::Cancelled, "{msg}");
    ok(|e| unsafe { cuzk_job_progress(behind, &mut done, &mut total, &mut finished, e) });
    assert_eq!((done, total, finished), (0, 2, true), "the real counts after the wait");
    assert!(unsafe { cuzk_job_cancel(long) });
    unsafe {
        cuzk_job_free(long);
        cuzk_job_free(behind);
        cuzk_pool_free(pool);
        cuzk_engine_free(engine);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}

#[test]
fn an_assignment_larger_than_the_budget_is_refused() {
    // A one-byte budget and an assignment made outside the engine's pool (which would refuse
    // it): BUDGET_EXHAUSTED, as the status promises, and nothing counted past the limit.
    let r1cs = toy_r1cs();
    let params = dev_params(r1cs, 3);
    let mut config = cuzk_engine_config_default();
    config.backend = CUZK_BACKEND_CPU;
    config.memory = CUZK_POOL_MEMORY_HEAP;
    config.synthesis_workers = 1;
    config.budget_bytes = 1;
    config.budget_timeout_ms = 200;
    let mut engine = null_mut();
    ok(|e| unsafe { cuzk_engine_new(&config, &mut engine, e) });
    let asg = toy_assignment(r1cs, null(), 3);
    let mut job = null_mut();
    ok(|e| unsafe { cuzk_engine_submit(engine, params, &asg, 1, null(), null(), 0, &mut job, e) });
    let mut proof = vec![0u8; CUZK_PROOF_BYTES];
    let (status, msg) = call(|e| unsafe { cuzk_job_wait(job, proof.as_mut_ptr(), proof.len(), e) });
    assert_eq!(status, cuzk_status::BudgetExhausted, "{msg}");
    assert!(msg.contains("budget"), "{msg}");
    unsafe { cuzk_job_free(job) };
    let st = stats(engine);
    assert_eq!(st.budget_limit, 1);
    assert!(
        st.budget_peak <= st.budget_limit,
        "peak {} over the limit",
        st.budget_peak
    );
    unsafe {
        cuzk_engine_free(engine);
        cuzk_params_free(params);
        cuzk_r1cs_free(r1cs);
    }
}
