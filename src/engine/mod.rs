//! The proving engine: synthesis overlapped with GPU proving. Its building blocks land here
//! one by one; the engine itself arrives with issue 9.

pub mod pacer;
