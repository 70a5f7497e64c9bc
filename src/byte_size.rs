//! Byte sizes as people write them: the one rule every size cuzk reads from text follows — the
//! environment (`CUZK_GPU_MEMORY_LIMIT`, `CUZK_FILECOIN_BUDGET`), the daemon's flags and its
//! TOML file (which go through the Filecoin layer's reading of those variables).
//!
//! The rule ([`parse`]): digits, then optionally a unit; spaces around the text and between the
//! number and the unit are ignored, and the unit's case is not significant.
//!
//! | unit                        | bytes  |
//! |-----------------------------|--------|
//! | none, `B`                   | 1      |
//! | `K`, `KB`, `KiB` (and `Ki`) | 2^10   |
//! | `M`, `MB`, `MiB` (and `Mi`) | 2^20   |
//! | `G`, `GB`, `GiB` (and `Gi`) | 2^30   |
//! | `T`, `TB`, `TiB` (and `Ti`) | 2^40   |
//!
//! Every unit is a binary multiple: `24G`, `24GB` and `24GiB` are all 24 × 2^30 bytes (memory
//! sizes are meant, and that is what every spelling meant here before). No fractions, no sign,
//! no other unit; a size past `usize` is an error too.

use std::fmt;

/// Why a text is not a byte size. Its message says what is wrong and what is expected (the
/// text itself is for the caller to name, with where it came from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteSizeError {
    reason: String,
}

impl fmt::Display for ByteSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; expected a byte size: digits, then optionally K, M, G or T (binary: K = 1024) with \
             an optional B or iB, any case, e.g. 25769803776, 24G, 24GB or 24GiB",
            self.reason
        )
    }
}

impl std::error::Error for ByteSizeError {}

fn error(reason: impl Into<String>) -> ByteSizeError {
    ByteSizeError { reason: reason.into() }
}

/// Reads a byte size by the rule of this module's documentation.
///
/// # Errors
/// [`ByteSizeError`] for an empty text, no digits, an unknown unit or a size past `usize`.
pub fn parse(text: &str) -> Result<usize, ByteSizeError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(error("empty"));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(error(format!("{t:?} does not start with digits")));
    }
    let unit = unit.trim_start();
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "ki" | "kib" => 10,
        "m" | "mb" | "mi" | "mib" => 20,
        "g" | "gb" | "gi" | "gib" => 30,
        "t" | "tb" | "ti" | "tib" => 40,
        _ => return Err(error(format!("unknown unit {unit:?}"))),
    };
    let too_large = || error(format!("{t:?} is more than {} bytes", usize::MAX));
    let n: usize = digits.parse().map_err(|_| too_large())?;
    n.checked_mul(1usize << shift).ok_or_else(too_large)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_either_parser_accepted_means_the_same_bytes() {
        for (text, bytes) in [
            ("0", 0),
            ("123", 123),
            ("123B", 123),
            ("123 b", 123),
            ("1K", 1 << 10),
            ("1kb", 1 << 10),
            ("1KiB", 1 << 10),
            ("512MiB", 512 << 20),
            ("512m", 512 << 20),
            ("512 MB", 512 << 20),
            ("24G", 24 << 30),
            ("24GB", 24 << 30),
            ("24GiB", 24 << 30),
            ("24gib", 24 << 30),
            ("24GIB", 24 << 30),
            ("24 GiB", 24 << 30),
            ("24Gi", 24 << 30),
            ("8mi", 8 << 20),
            (" 96GiB\n", 96 << 30),
            ("\t12 GB ", 12 << 30),
            ("1TiB", 1 << 40),
            ("2t", 2 << 40),
            ("25769803776", 25769803776),
            ("007K", 7 << 10),
        ] {
            assert_eq!(parse(text), Ok(bytes), "{text:?}");
        }
    }

    #[test]
    fn anything_else_is_an_error_that_says_what_is_wrong_and_what_is_expected() {
        for (text, reason) in [
            ("", "empty"),
            ("   ", "empty"),
            ("GiB", "does not start with digits"),
            ("-1", "does not start with digits"),
            ("+1", "does not start with digits"),
            ("1.5GiB", "unknown unit \".5GiB\""),
            ("24 XB", "unknown unit \"XB\""),
            ("24GBB", "unknown unit \"GBB\""),
            ("24GiBB", "unknown unit \"GiBB\""),
            ("24iB", "unknown unit \"iB\""),
            ("24BB", "unknown unit \"BB\""),
            ("24 P", "unknown unit \"P\""),
            ("1 2", "unknown unit \"2\""),
            ("lots", "does not start with digits"),
            ("99999999999TiB", "is more than"),
            ("99999999999999999999999", "is more than"),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(reason), "{text:?}: {e}");
            assert!(e.contains("e.g. 25769803776, 24G, 24GB or 24GiB"), "{text:?}: {e}");
        }
        assert_eq!(parse(&usize::MAX.to_string()), Ok(usize::MAX));
        assert!(parse(&format!("{}K", usize::MAX >> 9)).is_err());
    }
}
