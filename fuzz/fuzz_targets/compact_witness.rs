//! The compact witness (0/1 values as bits, the others packed): any sequence of values,
//! written one at a time on the heap or into a pool from any size hint, decodes to itself.
#![no_main]

use bellpepper_core::ConstraintSystem;
use blstrs::Scalar;
use cuzk::compiled::WitnessCs;
use cuzk::{PinnedPool, PoolConfig};
use ff::Field;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    // Each byte one value: 0, 1, a small number, or -that number (not a bit either way).
    let values: Vec<Scalar> = rest
        .iter()
        .map(|&b| match b % 4 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => Scalar::from(u64::from(b) + 2),
            _ => -Scalar::from(u64::from(b)),
        })
        .collect();
    let pool = PinnedPool::heap(PoolConfig::default());
    let hint = usize::from(head) * values.len() / 255;
    let cs = if head % 2 == 0 {
        WitnessCs::new()
    } else {
        WitnessCs::in_pool(&pool, hint).unwrap()
    };
    let mut cs = cs.dense_threshold_percent(u32::from(head) % 101);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE)).unwrap();
    for (i, v) in values.iter().enumerate() {
        cs.alloc(|| format!("v{i}"), || Ok(*v)).unwrap();
    }
    let w = cs.finish("fuzz").unwrap();
    assert_eq!(w.num_aux(), values.len());
    for (j, v) in values.iter().enumerate() {
        assert_eq!(w.aux_value(j), Some(*v), "value {j}");
    }
    assert_eq!(w.aux_value(values.len()), None);
    assert_eq!(w.expand_aux().unwrap(), values);
    assert_eq!(w.expand_aux_in(&pool).unwrap().as_slice(), values.as_slice());
    let bits = values
        .iter()
        .filter(|v| **v == Scalar::ZERO || **v == Scalar::ONE)
        .count();
    if w.is_compact() {
        assert_eq!(w.num_bits(), bits);
    }
});
