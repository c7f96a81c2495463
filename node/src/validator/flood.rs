//! The deploys of the test fault `Fault::DeployFlood` (`GAMECHAIN_TEST_FAULT=deploy_flood`): a
//! faulty proposer fills every block it leads with deploys of distinct modules of the largest
//! size, so that every honest validator must compile all of them. The modules are valid ABI v1
//! modules (they load and run) whose code is as large as the chain allows and as costly to
//! compile per byte as plain code gets: about 100 functions of straight-line arithmetic. Each
//! carries a tag in its code, so no two compile to one cached module.
//!
//! The deploys are signed by a fixed key ([`flood_key`]) nobody else uses; on a chain with fees
//! it holds nothing and its deploys cannot be included (the fault then proposes honest blocks).

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

/// Unsigned LEB128.
fn leb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Signed LEB128.
fn sleb(mut v: i64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
        if done {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn section(id: u8, body: &[u8], out: &mut Vec<u8>) {
    out.push(id);
    leb(body.len() as u64, out);
    out.extend_from_slice(body);
}

/// A valid ABI v1 module of about `bytes` bytes (at most that) whose code depends on `tag`:
/// `gc_apply` calls the first of many functions of straight-line `i64` arithmetic.
pub fn flood_module(tag: u64, bytes: usize) -> Vec<u8> {
    /// Bytes of one function body (about).
    const BODY: usize = 10_000;
    // One step: local.get 0, i64.const 7, i64.add, local.set 0.
    const STEP: [u8; 7] = [0x20, 0x00, 0x42, 0x07, 0x7c, 0x21, 0x00];
    let funcs = (bytes.saturating_sub(256) / (BODY + 4)).max(1);
    let mut out = b"\0asm\x01\0\0\0".to_vec();
    // Types: 0 () -> i32, 1 (i32) -> i32, 2 (i32 i32 i32 i32) -> i32, 3 (i32 i32) -> i32,
    // 4 () -> ().
    let types: [&[u8]; 5] = [
        &[0x60, 0, 1, 0x7f],
        &[0x60, 1, 0x7f, 1, 0x7f],
        &[0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f],
        &[0x60, 2, 0x7f, 0x7f, 1, 0x7f],
        &[0x60, 0, 0],
    ];
    let mut s = vec![types.len() as u8];
    for t in types {
        s.extend_from_slice(t);
    }
    section(1, &s, &mut out);
    let mut s = Vec::new();
    leb(4 + funcs as u64, &mut s);
    s.extend_from_slice(&[0, 1, 2, 3]);
    s.extend(std::iter::repeat_n(4u8, funcs));
    section(3, &s, &mut out);
    section(5, &[1, 0, 1], &mut out);
    let mut s = vec![5];
    for (name, kind, index) in [
        ("memory", 2u8, 0u8),
        ("gc_abi_version", 0, 0),
        ("gc_alloc", 0, 1),
        ("gc_apply", 0, 2),
        ("gc_view", 0, 3),
    ] {
        s.push(name.len() as u8);
        s.extend_from_slice(name.as_bytes());
        s.push(kind);
        s.push(index);
    }
    section(7, &s, &mut out);
    let mut code = Vec::new();
    leb(4 + funcs as u64, &mut code);
    let body = |f: &[u8], code: &mut Vec<u8>| {
        leb(f.len() as u64, code);
        code.extend_from_slice(f);
    };
    body(&[0, 0x41, 1, 0x0b], &mut code); // gc_abi_version: 1
    body(&[0, 0x41, 0x80, 0x08, 0x0b], &mut code); // gc_alloc: 1024
                                                   // gc_apply: call function 4, return 0.
    body(&[0, 0x10, 4, 0x41, 0, 0x0b], &mut code);
    body(&[0, 0x41, 0, 0x0b], &mut code); // gc_view: 0
    for n in 0..funcs {
        // One i64 local, set to the tag (so the code differs per tag), then the steps.
        let mut f = vec![1, 1, 0x7e, 0x42];
        sleb(tag as i64 ^ n as i64, &mut f);
        f.extend_from_slice(&[0x21, 0x00]);
        while f.len() + STEP.len() < BODY {
            f.extend_from_slice(&STEP);
        }
        f.push(0x0b);
        body(&f, &mut code);
    }
    section(10, &code, &mut out);
    out
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
