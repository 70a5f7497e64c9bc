// Shared by the Filecoin targets (included with `include!`): no parameters are found, so an
// input that decodes and passes every check ends at the parameter load, never on an engine.

/// Points filecoin-proofs' parameter cache at an empty directory, once per process, before
/// anything reads it. Also replaces libfuzzer's panic hook, which aborts on every panic: cuzk
/// catches the panics of filecoin-proofs' own code (an `Error::Filecoin` saying "panicked"),
/// and those are findings to read, not crashes of cuzk; the hook prints each place once. A
/// panic that escapes cuzk still aborts the run (libfuzzer catches it at the target's edge).
fn no_parameters() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let seen = std::sync::Mutex::new(std::collections::HashSet::new());
        std::panic::set_hook(Box::new(move |info| {
            let at = info.location().map(|l| l.to_string()).unwrap_or_default();
            if seen.lock().map(|mut s| s.insert(at.clone())).unwrap_or(false) {
                eprintln!("caught panic (first at this place): {info}");
            }
        }));
        let dir = std::env::temp_dir().join(format!("cuzk-fuzz-no-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    });
}

/// The bytes cut into pieces, each after a 2-byte little-endian length (the last piece takes
/// what is left).
#[allow(dead_code)] // not every target cuts its input
fn pieces(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while data.len() >= 2 {
        let n = usize::from(u16::from_le_bytes([data[0], data[1]])).min(data.len() - 2);
        out.push(data[2..2 + n].to_vec());
        data = &data[2 + n..];
    }
    out
}

/// What a call may answer: an error (the input refused, or the parameters missing), never a
/// proof (there are no parameters).
fn expect_refused(r: cuzk::Result<Vec<u8>>) {
    assert!(r.is_err(), "a proof without parameters");
}
