//! Waiting on the engine: tests poll its statistics for a state, never a timing.

use std::time::{Duration, Instant};

use cuzk::engine::{Engine, EngineStats};

/// Polls `engine.stats()` until `pred` holds (a state, not a timing); panics, naming `what`
/// and showing the last statistics, when it does not within `within`.
pub fn wait_for(engine: &Engine, within: Duration, what: &str, pred: impl Fn(&EngineStats) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        let stats = engine.stats();
        if pred(&stats) {
            return;
        }
        assert!(Instant::now() < deadline, "never reached: {what}; {stats:#?}");
        std::thread::sleep(Duration::from_millis(2));
    }
}
