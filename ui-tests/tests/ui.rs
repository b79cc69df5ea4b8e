//! Runs the compile-fail and compile-pass cases of `graph!`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/parse/*.rs");
    t.compile_fail("ui/check/*.rs");
    t.compile_fail("ui/shape/*.rs");
    t.compile_fail("ui/hygiene/*.rs");
    t.compile_fail("ui/types/*.rs");
    t.compile_fail("ui/loops/*.rs");
    t.compile_fail("ui/helpers/*.rs");
    t.pass("pass/*.rs");
}
