//! placeholder
#![cfg(feature = "daemon")]
