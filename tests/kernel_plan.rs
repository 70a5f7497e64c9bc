//! The kernels' MSM plan (`kernels/msm/plan.h`: window size, sort parts, device memory, stream
//! chunks) is plain host C: this test compiles `kernels/test/plan_test.c` with the system C
//! compiler (`$CC`, else `cc`) and runs it, so the plan is checked on every machine, GPU or not.

use std::path::Path;
use std::process::Command;

#[test]
fn msm_plan_unit_test_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plan_test");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let built = Command::new(&cc)
        .args(["-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("kernels"))
        .arg(root.join("kernels/test/plan_test.c"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        built.status.success(),
        "plan_test.c does not compile with `{cc}`:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&out).output().expect("run plan_test");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the MSM plan's checks failed:\n{stdout}");
    assert!(stdout.contains(" checks, 0 failed"), "unexpected output:\n{stdout}");
}
