//! Lowers a module's bulk-memory copies and fills (`memory.copy`, `memory.fill`) to calls of two
//! functions added to it that do the same with loads and stores, for `cosmwasm-vm`, which refuses
//! the bulk-memory proposal. Rust's `wasm32-unknown-unknown` standard library emits both since
//! Rust 1.87, even under `-C target-cpu=mvp` (binaryen's `wasm-opt
//! --llvm-memory-copy-fill-lowering` is the usual tool; this does the same without it).
//!
//! The added functions, of type `(i32 dst, i32 src_or_value, i32 len) -> ()`, copy or fill
//! 8 bytes at a time and then byte by byte; a copy runs forwards when `dst <= src` and
//! backwards otherwise, so overlapping ranges come out as `memory.copy`'s. Out of bounds they
//! trap part-way instead of before the first byte, and not at all for a length of 0, which a
//! contract that works never sees.
//! Everything else is re-encoded unchanged; the new functions come after every existing one, so
//! no index moves.

use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{BlockType, CodeSection, Function, Instruction, MemArg, ValType};

/// The module's shape the lowering needs: its type count and its function count (imports
/// included), which give the new type's and functions' indices.
struct Lowering {
    types: u32,
    functions: u32,
}

impl Lowering {
    fn copy_index(&self) -> u32 {
        self.functions
    }
    fn fill_index(&self) -> u32 {
        self.functions + 1
    }
}

impl Reencode for Lowering {
    type Error = std::convert::Infallible;

    fn instruction<'a>(
        &mut self,
        op: wasmparser::Operator<'a>,
    ) -> Result<Instruction<'a>, reencode::Error<Self::Error>> {
        Ok(match op {
            wasmparser::Operator::MemoryCopy {
                dst_mem: 0,
                src_mem: 0,
            } => Instruction::Call(self.copy_index()),
            wasmparser::Operator::MemoryFill { mem: 0 } => Instruction::Call(self.fill_index()),
            other => reencode::utils::instruction(self, other)?,
        })
    }

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_type_section(self, types, section)?;
        types
            .ty()
            .function([ValType::I32, ValType::I32, ValType::I32], []);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_function_section(self, functions, section)?;
        functions.function(self.types);
        functions.function(self.types);
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_code_section(self, code, section)?;
        code.function(&copy_function());
        code.function(&fill_function());
        Ok(())
    }
}

/// `wasm` with every `memory.copy` and `memory.fill` of memory 0 lowered. Panics on a module
/// that does not parse, or has no type, function or code section (a contract always has them).
pub fn lower(wasm: &[u8]) -> Vec<u8> {
    let mut shape = Lowering {
        types: 0,
        functions: 0,
    };
    let (mut has_types, mut has_code) = (false, false);
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.expect("the contract parses") {
            wasmparser::Payload::TypeSection(s) => {
                shape.types = s.count();
                has_types = true;
            }
            wasmparser::Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    if matches!(import.expect("an import").ty, wasmparser::TypeRef::Func(_)) {
                        shape.functions += 1;
                    }
                }
            }
            wasmparser::Payload::FunctionSection(s) => shape.functions += s.count(),
            wasmparser::Payload::CodeSectionStart { .. } => has_code = true,
            _ => {}
        }
    }
    assert!(has_types && has_code, "the contract has types and code");
    let mut module = wasm_encoder::Module::new();
    shape
        .parse_core_module(&mut module, wasmparser::Parser::new(0), wasm)
        .expect("the contract re-encodes");
    module.finish()
}

fn mem(align: u32) -> MemArg {
    MemArg {
        offset: 0,
        align,
        memory_index: 0,
    }
}

/// `local += delta` for an i32 local (delta may be negative).
fn bump(f: &mut Function, local: u32, delta: i32) {
    f.instructions()
        .local_get(local)
        .i32_const(delta)
        .i32_add()
        .local_set(local);
}

/// `block { loop { if len < step: break; body; len -= step; continue } }` over `len` (local 2).
fn chunks(f: &mut Function, step: i32, body: impl Fn(&mut Function)) {
    f.instructions()
        .block(BlockType::Empty)
        .loop_(BlockType::Empty)
        .local_get(2)
        .i32_const(step)
        .i32_lt_u()
        .br_if(1);
    body(f);
    bump(f, 2, -step);
    f.instructions().br(0).end().end();
}

/// `(dst, src, len)`: `memory.copy` of memory 0 with loads and stores.
fn copy_function() -> Function {
    let mut f = Function::new([]);
    let word = |f: &mut Function| {
        f.instructions()
            .local_get(0)
            .local_get(1)
            .i64_load(mem(0))
            .i64_store(mem(0));
    };
    let byte = |f: &mut Function| {
        f.instructions()
            .local_get(0)
            .local_get(1)
            .i32_load8_u(mem(0))
            .i32_store8(mem(0));
    };
    // Forwards when dst <= src.
    f.instructions()
        .local_get(0)
        .local_get(1)
        .i32_le_u()
        .if_(BlockType::Empty);
    chunks(&mut f, 8, |f| {
        word(f);
        bump(f, 0, 8);
        bump(f, 1, 8);
    });
    chunks(&mut f, 1, |f| {
        byte(f);
        bump(f, 0, 1);
        bump(f, 1, 1);
    });
    // Backwards otherwise, from the ends.
    f.instructions().else_();
    for local in [0, 1] {
        f.instructions()
            .local_get(local)
            .local_get(2)
            .i32_add()
            .local_set(local);
    }
    chunks(&mut f, 8, |f| {
        bump(f, 0, -8);
        bump(f, 1, -8);
        word(f);
    });
    chunks(&mut f, 1, |f| {
        bump(f, 0, -1);
        bump(f, 1, -1);
        byte(f);
    });
    f.instructions().end().end();
    f
}

/// `(dst, value, len)`: `memory.fill` of memory 0 with stores (local 3: the byte in all 8 lanes).
fn fill_function() -> Function {
    let mut f = Function::new([(1, ValType::I64)]);
    f.instructions()
        .local_get(1)
        .i64_extend_i32_u()
        .i64_const(0xff)
        .i64_and()
        .i64_const(0x0101_0101_0101_0101)
        .i64_mul()
        .local_set(3);
    chunks(&mut f, 8, |f| {
        f.instructions().local_get(0).local_get(3).i64_store(mem(0));
        bump(f, 0, 8);
    });
    chunks(&mut f, 1, |f| {
        f.instructions()
            .local_get(0)
            .local_get(1)
            .i32_store8(mem(0));
        bump(f, 0, 1);
    });
    f.instructions().end();
    f
}
