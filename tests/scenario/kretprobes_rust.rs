// SPDX-License-Identifier: MIT
//! kretprobes_rust.rs - the Rust side of kretprobes_rust.c: a panic that
//! unwinds through C frames (kretprobed) to a catch_unwind.

use std::panic;

/// Panics for x >= 0 (unwinding into its C caller), else returns -x.
#[no_mangle]
pub extern "C-unwind" fn krs_panic(x: i64) -> i64 {
    if x >= 0 {
        panic!("boom {}", x);
    }
    -x
}

/// f(x), or 1000 + x when a panic unwound out of it.
#[no_mangle]
pub extern "C" fn krs_catch(f: extern "C-unwind" fn(i64) -> i64, x: i64) -> i64 {
    match panic::catch_unwind(|| f(x)) {
        Ok(v) => v,
        Err(_) => 1000 + x,
    }
}

/// No message on stderr for each panic.
#[no_mangle]
pub extern "C" fn krs_quiet() {
    panic::set_hook(Box::new(|_| {}));
}
