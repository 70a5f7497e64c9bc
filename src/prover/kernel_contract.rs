//! The CUDA kernels' contract with Rust, as `kernels/cuzk_kernels.h` states it: the phases a
//! failed kernel call reports, the kernels' own error codes, and the device working set a
//! proof needs. Compiled in every build, so that a test pins every value to the header's
//! `#define`s without a CUDA toolkit; the CUDA backend uses them by name.

/// `CUZK_K_PHASE_*`: where a failed kernel call was (and where a test fault is injected).
pub mod phase {
    /// Bases upload, after the copy.
    pub const UPLOAD: i32 = 1;
    /// All three a/b/c copies queued, none waited.
    pub const ABC_COPY: i32 = 2;
    /// An H step: index 3k, 3k+1, 3k+2 (k = a, b) = inverse NTT, its last stages with the
    /// coset scale, coset NTT; then [`NTT_POINTWISE`]; 6 and 7 c's inverse NTT and its last
    /// stages (c is not taken to the coset: 8 is unused); [`NTT_INVERSE`], [`NTT_GATHER`].
    pub const NTT: i32 = 3;
    /// Before the H MSM.
    pub const H_MSM: i32 = 4;
    /// A batched MSM job (the index is the job), with the next job's copy in flight.
    pub const MSM_JOB: i32 = 5;
    /// A single MSM call.
    pub const MSM: i32 = 6;
    /// [`NTT`]'s index of the pointwise A·B/Z step.
    pub const NTT_POINTWISE: i32 = 9;
    /// [`NTT`]'s index of the final inverse NTT.
    pub const NTT_INVERSE: i32 = 10;
    /// [`NTT`]'s index of the gather of H's coefficients (minus c's, over Z).
    pub const NTT_GATHER: i32 = 11;
}

/// `CUZK_K_ERR_*`: the kernels' own error codes (CUDA's are positive).
pub mod err {
    /// A NULL argument.
    pub const NULL_ARG: i32 = -1;
    /// No such device.
    pub const BAD_DEVICE: i32 = -2;
    /// Sizes out of range (more bases needed than uploaded, ...).
    pub const RANGE: i32 = -3;
    /// G1 bases passed to a G2 MSM or the other way round.
    pub const WRONG_GROUP: i32 = -4;
    /// More than 2^31 − 1 points or 2^31 scalars.
    pub const TOO_LARGE: i32 = -5;
    /// A domain outside 2^1 ..= 2^31, or more values than it holds.
    pub const BAD_LOG_M: i32 = -6;
    /// A C++ exception was caught (e.g. `std::bad_alloc`), or an inconsistency.
    pub const INTERNAL: i32 = -7;
    /// Batched MSM jobs on different devices.
    pub const MIXED_DEVICES: i32 = -8;
}

/// `CUZK_K_WORKING_BYTES_PER_DOMAIN_ELEMENT`: device bytes a proof needs besides the
/// parameters, per element of its evaluation domain (see the header for the breakdown).
pub const WORKING_BYTES_PER_DOMAIN_ELEMENT: usize = 400;

#[cfg(test)]
mod tests {
    use super::*;

    /// The header's `#define NAME (VALUE)` lines, as (name, value).
    fn defines() -> Vec<(String, i64)> {
        include_str!("../../kernels/cuzk_kernels.h")
            .lines()
            .filter_map(|l| {
                let mut words = l.strip_prefix("#define ")?.split_whitespace();
                let name = words.next()?;
                let value = words.next()?.trim_matches(|c| c == '(' || c == ')');
                Some((name.to_string(), value.parse().ok()?))
            })
            .collect()
    }

    #[test]
    fn every_value_is_the_headers() {
        let expected: [(&str, i64); 16] = [
            ("CUZK_K_PHASE_UPLOAD", phase::UPLOAD.into()),
            ("CUZK_K_PHASE_ABC_COPY", phase::ABC_COPY.into()),
            ("CUZK_K_PHASE_NTT", phase::NTT.into()),
            ("CUZK_K_PHASE_H_MSM", phase::H_MSM.into()),
            ("CUZK_K_PHASE_MSM_JOB", phase::MSM_JOB.into()),
            ("CUZK_K_PHASE_MSM", phase::MSM.into()),
            ("CUZK_K_NTT_STEP_POINTWISE", phase::NTT_POINTWISE.into()),
            ("CUZK_K_NTT_STEP_INVERSE", phase::NTT_INVERSE.into()),
            ("CUZK_K_NTT_STEP_GATHER", phase::NTT_GATHER.into()),
            ("CUZK_K_ERR_NULL_ARG", err::NULL_ARG.into()),
            ("CUZK_K_ERR_BAD_DEVICE", err::BAD_DEVICE.into()),
            ("CUZK_K_ERR_RANGE", err::RANGE.into()),
            ("CUZK_K_ERR_WRONG_GROUP", err::WRONG_GROUP.into()),
            ("CUZK_K_ERR_TOO_LARGE", err::TOO_LARGE.into()),
            ("CUZK_K_ERR_BAD_LOG_M", err::BAD_LOG_M.into()),
            ("CUZK_K_ERR_INTERNAL", err::INTERNAL.into()),
        ];
        let found = defines();
        for (name, value) in expected.iter().chain(&[
            ("CUZK_K_ERR_MIXED_DEVICES", i64::from(err::MIXED_DEVICES)),
            (
                "CUZK_K_WORKING_BYTES_PER_DOMAIN_ELEMENT",
                WORKING_BYTES_PER_DOMAIN_ELEMENT as i64,
            ),
        ]) {
            let header: Vec<i64> = found.iter().filter(|(n, _)| n == name).map(|(_, v)| *v).collect();
            assert_eq!(header, [*value], "{name}: the header says {header:?}, Rust {value}");
        }
        // Every phase, step and error code the header defines is one Rust knows.
        let known = expected.len() + 2;
        let in_header = found
            .iter()
            .filter(|(n, _)| {
                ["CUZK_K_PHASE_", "CUZK_K_NTT_STEP_", "CUZK_K_ERR_", "CUZK_K_WORKING_"]
                    .iter()
                    .any(|p| n.starts_with(p))
            })
            .count();
        assert_eq!(in_header, known, "the header defines constants Rust does not mirror");
    }
}
