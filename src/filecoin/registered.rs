//! Filecoin's registered-proof numbers — go-state-types' `abi.RegisteredSealProof`,
//! `abi.RegisteredPoStProof` and `abi.RegisteredUpdateProof`, the values Curio and Lotus send —
//! as filecoin-proofs-api's types: one table, which both front doors (the C ABI and the daemon)
//! decode with. Each kind is blocks of the five sector sizes, in [`SECTOR_SIZES`] order.

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// The sector sizes, in the order every block of registered proofs lists them.
pub const SECTOR_SIZES: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];

/// `abi.RegisteredSealProof` `v`: the five sizes of V1 (0..=4), V1_1 (5..=9), V1_1 with
/// synthetic PoRep (10..=14) and V1_2 non-interactive (15..=19); `None` past them.
pub fn seal_proof_from_abi(v: u64) -> Option<RegisteredSealProof> {
    use RegisteredSealProof as S;
    const BLOCKS: [[S; 5]; 4] = [
        [
            S::StackedDrg2KiBV1,
            S::StackedDrg8MiBV1,
            S::StackedDrg512MiBV1,
            S::StackedDrg32GiBV1,
            S::StackedDrg64GiBV1,
        ],
        [
            S::StackedDrg2KiBV1_1,
            S::StackedDrg8MiBV1_1,
            S::StackedDrg512MiBV1_1,
            S::StackedDrg32GiBV1_1,
            S::StackedDrg64GiBV1_1,
        ],
        [
            S::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
            S::StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        ],
        [
            S::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
            S::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
        ],
    ];
    by_block(&BLOCKS, v)
}

/// `abi.RegisteredPoStProof` `v`: Winning V1 (0..=4), Window V1 (5..=9), Window V1_2
/// (10..=14); `None` past them.
pub fn post_proof_from_abi(v: u64) -> Option<RegisteredPoStProof> {
    use RegisteredPoStProof as P;
    const BLOCKS: [[P; 5]; 3] = [
        [
            P::StackedDrgWinning2KiBV1,
            P::StackedDrgWinning8MiBV1,
            P::StackedDrgWinning512MiBV1,
            P::StackedDrgWinning32GiBV1,
            P::StackedDrgWinning64GiBV1,
        ],
        [
            P::StackedDrgWindow2KiBV1,
            P::StackedDrgWindow8MiBV1,
            P::StackedDrgWindow512MiBV1,
            P::StackedDrgWindow32GiBV1,
            P::StackedDrgWindow64GiBV1,
        ],
        [
            P::StackedDrgWindow2KiBV1_2,
            P::StackedDrgWindow8MiBV1_2,
            P::StackedDrgWindow512MiBV1_2,
            P::StackedDrgWindow32GiBV1_2,
            P::StackedDrgWindow64GiBV1_2,
        ],
    ];
    by_block(&BLOCKS, v)
}

/// `abi.RegisteredUpdateProof` `v`: the five sizes of V1 (0..=4); `None` past them.
pub fn update_proof_from_abi(v: u64) -> Option<RegisteredUpdateProof> {
    use RegisteredUpdateProof as U;
    const BLOCKS: [[U; 5]; 1] = [[
        U::StackedDrg2KiBV1,
        U::StackedDrg8MiBV1,
        U::StackedDrg512MiBV1,
        U::StackedDrg32GiBV1,
        U::StackedDrg64GiBV1,
    ]];
    by_block(&BLOCKS, v)
}

fn by_block<T: Copy, const B: usize>(blocks: &[[T; 5]; B], v: u64) -> Option<T> {
    let v = usize::try_from(v).ok()?;
    blocks.get(v / SECTOR_SIZES.len()).map(|b| b[v % SECTOR_SIZES.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_numbers_name_the_proofs_curio_means() {
        assert_eq!(seal_proof_from_abi(3), Some(RegisteredSealProof::StackedDrg32GiBV1));
        assert_eq!(seal_proof_from_abi(8), Some(RegisteredSealProof::StackedDrg32GiBV1_1));
        assert_eq!(
            seal_proof_from_abi(18),
            Some(RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep)
        );
        assert_eq!(seal_proof_from_abi(20), None);
        assert_eq!(
            post_proof_from_abi(0),
            Some(RegisteredPoStProof::StackedDrgWinning2KiBV1)
        );
        assert_eq!(
            post_proof_from_abi(5),
            Some(RegisteredPoStProof::StackedDrgWindow2KiBV1)
        );
        assert_eq!(
            post_proof_from_abi(13),
            Some(RegisteredPoStProof::StackedDrgWindow32GiBV1_2)
        );
        assert_eq!(post_proof_from_abi(15), None);
        assert_eq!(update_proof_from_abi(4), Some(RegisteredUpdateProof::StackedDrg64GiBV1));
        assert_eq!(update_proof_from_abi(5), None);
        assert_eq!(update_proof_from_abi(u64::MAX), None);
    }

    #[test]
    fn each_block_lists_the_sizes_in_order() {
        let sizes = [2u64 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];
        for v in 0..20 {
            let size = u64::from(seal_proof_from_abi(v).unwrap().sector_size());
            assert_eq!(size, sizes[v as usize % 5], "seal proof {v}");
        }
        for v in 0..15 {
            let size = u64::from(post_proof_from_abi(v).unwrap().sector_size());
            assert_eq!(size, sizes[v as usize % 5], "PoSt proof {v}");
        }
        for v in 0..5 {
            let size = u64::from(update_proof_from_abi(v).unwrap().sector_size());
            assert_eq!(size, sizes[v as usize], "update proof {v}");
        }
    }
}
