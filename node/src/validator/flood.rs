//! The deploys of the test fault `Fault::DeployFlood` (`GAMECHAIN_TEST_FAULT=deploy_flood`): a
//! faulty proposer fills every block it leads with deploys of distinct modules of the largest
//! size, so that every honest validator must compile all of them. The modules are valid ABI v1
//! modules (they load and run) whose code is as large as the chain allows and as costly to
//! compile per byte as plain code gets: about 100 functions of straight-line arithmetic. Each
//! carries a tag in its code, so no two compile to one cached module.
//!
//! The deploys are signed by a fixed key ([`flood_key`]) nobody else uses; on a chain with fees
//! it holds nothing and its deploys cannot be included (the fault then proposes honest blocks).

use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, MemorySection, MemoryType,
    Module, TypeSection, ValType,
};

use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx, TxBody, MAX_CODE_BYTES};

/// The key the flood's deploys are signed with.
pub fn flood_key(network: Network) -> SecretKey {
    let seed: [u8; 32] =
        gamechain_runtime::chain::hash::sha256(b"gamechain test fault: deploy flood");
    SecretKey::from_bytes(network, seed).expect("a SHA-256 digest is a valid key")
}

/// The deploy of flood module number `index` of a block at `height` stamped `time_ms`, signed by
/// `key` with `nonce`.
pub fn flood_deploy(
    key: &SecretKey,
    chain_id: &str,
    nonce: u64,
    height: u64,
    time_ms: u64,
    index: u32,
) -> SignedTx {
    let tag = time_ms ^ (u64::from(index) << 48) ^ height.rotate_left(20);
    TxBody {
        chain_id: chain_id.to_string(),
        from: key.address(),
        nonce,
        action: Action::Deploy {
            module: format!("flood_{height}_{index}"),
            code: flood_module(tag, MAX_CODE_BYTES - 4_096),
            policy: None,
        },
    }
    .sign(key)
}

/// A valid ABI v1 module of about `bytes` bytes (at most that) whose code depends on `tag`:
/// `gc_apply` calls the first of many functions of straight-line `i64` arithmetic.
pub fn flood_module(tag: u64, bytes: usize) -> Vec<u8> {
    /// Bytes of one function body (about).
    const BODY: usize = 10_000;
    /// Bytes of one step: local.get 0, i64.const 7, i64.add, local.set 0.
    const STEP: usize = 7;
    let funcs = (bytes.saturating_sub(256) / (BODY + 4)).max(1) as u32;
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]); // 0: gc_abi_version, gc_view's shape
    types.ty().function([ValType::I32], [ValType::I32]); // 1: gc_alloc
    types.ty().function([ValType::I32; 4], [ValType::I32]); // 2: gc_apply
    types.ty().function([ValType::I32; 2], [ValType::I32]); // 3: gc_view
    types.ty().function([], []); // 4: the flood's bodies
    let mut functions = FunctionSection::new();
    for ty in [0, 1, 2, 3]
        .into_iter()
        .chain(std::iter::repeat_n(4, funcs as usize))
    {
        functions.function(ty);
    }
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports.export("memory", ExportKind::Memory, 0);
    for (i, name) in ["gc_abi_version", "gc_alloc", "gc_apply", "gc_view"]
        .into_iter()
        .enumerate()
    {
        exports.export(name, ExportKind::Func, i as u32);
    }
    let mut code = CodeSection::new();
    let constant = |v: i32| {
        let mut f = Function::new([]);
        f.instructions().i32_const(v).end();
        f
    };
    code.function(&constant(1)); // gc_abi_version: 1
    code.function(&constant(1024)); // gc_alloc: 1024
    let mut apply = Function::new([]);
    apply.instructions().call(4).i32_const(0).end(); // gc_apply: call function 4, return 0
    code.function(&apply);
    code.function(&constant(0)); // gc_view: 0
    for n in 0..funcs {
        // One i64 local, set to the tag (so the code differs per tag), then the steps.
        let mut f = Function::new([(1, ValType::I64)]);
        f.instructions()
            .i64_const(tag as i64 ^ i64::from(n))
            .local_set(0);
        while f.byte_len() + STEP < BODY {
            f.instructions()
                .local_get(0)
                .i64_const(7)
                .i64_add()
                .local_set(0);
        }
        f.instructions().end();
        code.function(&f);
    }
    let mut module = Module::new();
    module
        .section(&types)
        .section(&functions)
        .section(&memories)
        .section(&exports)
        .section(&code);
    module.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flood_modules_are_large_distinct_and_load() {
        let a = flood_module(1, MAX_CODE_BYTES - 4_096);
        let b = flood_module(2, MAX_CODE_BYTES - 4_096);
        assert!(
            a.len() <= MAX_CODE_BYTES && a.len() > MAX_CODE_BYTES - 30_000,
            "{}",
            a.len()
        );
        assert_ne!(a, b);
        let rt = gamechain_runtime::Runtime::new(gamechain_runtime::RuntimeConfig {
            allocation: gamechain_runtime::Allocation::OnDemand,
            ..Default::default()
        })
        .unwrap();
        gamechain_runtime::WasmModule::load(
            &rt,
            "flood",
            &a,
            None,
            gamechain_runtime::Origin::Upload,
        )
        .unwrap();
    }
}
