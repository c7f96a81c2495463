//! Compile bombs: generators of small, valid chain modules whose shape makes an optimising
//! compiler's time grow faster than their size (issue "a stranger's upload must never stall the
//! chain"). Shared by `runtime/tests/compile_bombs.rs` (they load and run under the upload
//! compiler) and `runtime/benches/compile_bombs.rs` (compile time per KB, Cranelift vs Winch).
//!
//! Every module is a complete ABI v1 module (`memory`, `gc_abi_version`, `gc_alloc`,
//! `gc_apply`, `gc_view`); `gc_apply` runs the bomb function once with its loop counters set so
//! that it does a bounded amount of work and returns, so the module also *runs*.

#![allow(dead_code)]

/// One bomb: a name, and its WAT text.
pub struct Bomb {
    /// Short name with its parameters, e.g. `locals_x_loops(1000x200)`.
    pub name: String,
    /// The module, WAT text.
    pub wat: String,
}

impl Bomb {
    /// The binary module.
    pub fn wasm(&self) -> Vec<u8> {
        wat::parse_str(&self.wat).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// The ABI exports around a `$bomb` function (no parameters, no results).
fn module(bomb_func: &str) -> String {
    format!(
        r#"(module
  (memory (export "memory") 1)
  (func (export "gc_abi_version") (result i32) (i32.const 1))
  (func (export "gc_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "gc_apply") (param i32 i32 i32 i32) (result i32) (call $bomb) (i32.const 0))
  (func (export "gc_view") (param i32 i32) (result i32) (i32.const 0))
  {bomb_func})"#
    )
}

/// `locals` i32 locals, all incremented inside `depth` nested loops, each loop closed by a
/// `br_if` back-edge taken while local 0 is below 2: every local is live across every
/// back-edge (the shape that makes regalloc2 superlinear: 64 s for 1,000 × 200 in wasmtime 48).
pub fn locals_x_loops(locals: usize, depth: usize) -> Bomb {
    let mut f = String::from("(func $bomb");
    for _ in 0..locals {
        f.push_str(" (local i32)");
    }
    f.push('\n');
    for _ in 0..depth {
        f.push_str("loop\n");
    }
    for i in 0..locals {
        f.push_str(&format!(
            "local.get {i} i32.const 1 i32.add local.set {i}\n"
        ));
    }
    for _ in 0..depth {
        f.push_str("local.get 0 i32.const 2 i32.lt_u br_if 0\nend\n");
    }
    f.push(')');
    Bomb {
        name: format!("locals_x_loops({locals}x{depth})"),
        wat: module(&f),
    }
}

/// `depth` nested `if`s on local 0 (200,000 took over 120 s and 726 MB in Cranelift).
pub fn nested_ifs(depth: usize) -> Bomb {
    let mut f = String::from("(func $bomb (local i32)\n");
    for _ in 0..depth {
        f.push_str("local.get 0 if\n");
    }
    f.push_str("i32.const 1 local.set 0\n");
    for _ in 0..depth {
        f.push_str("end\n");
    }
    f.push(')');
    Bomb {
        name: format!("nested_ifs({depth})"),
        wat: module(&f),
    }
}

/// `count` functions of `locals` locals each, every one adding all its locals up, called in a
/// chain from `$bomb` (many medium frames: compile work spread over functions).
pub fn many_functions(count: usize, locals: usize) -> Bomb {
    let mut body = String::new();
    for n in 0..count {
        body.push_str(&format!("(func $f{n}"));
        for _ in 0..locals {
            body.push_str(" (local i64)");
        }
        body.push_str(" i64.const 0");
        for i in 0..locals {
            body.push_str(&format!(" local.get {i} i64.add"));
        }
        body.push_str(" drop)\n");
    }
    body.push_str("(func $bomb");
    for n in 0..count {
        body.push_str(&format!(" call $f{n}"));
    }
    body.push(')');
    Bomb {
        name: format!("many_functions({count}x{locals})"),
        wat: module(&body),
    }
}

/// Straight-line code: `ops` additions on one local.
pub fn straight_line(ops: usize) -> Bomb {
    let mut f = String::from("(func $bomb (local i32)\n");
    for _ in 0..ops {
        f.push_str("local.get 0 i32.const 7 i32.add local.set 0\n");
    }
    f.push(')');
    Bomb {
        name: format!("straight_line({ops})"),
        wat: module(&f),
    }
}
