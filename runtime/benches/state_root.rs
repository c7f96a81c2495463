//! What each state commitment (`runtime/chain/src/state_root/`) costs, on the workload the
//! choice of the sparse Merkle tree was measured on (issue 43): a state of `STATE_ROOT_KEYS`
//! entries (default 100,000 balance-like keys of 16-byte values) built at once, then 10 blocks
//! of 10,000 writes to existing keys (a fixed xorshift sequence) and a quiet block of 10 writes;
//! then, on the tree, proofs of a present and an absent key: µs to make and check one, bytes.
//! Prints µs per write for the sparse Merkle tree (one and two threads) and the LtHash (the
//! node's threaded path, with and without its element cache), and the tree's node bytes per
//! entry (`SparseMerkleTree::memory_bytes`; an LtHash is 2 KiB whatever the state); and what a
//! node joining from a snapshot pays to check the whole state chunk by chunk against the root
//! (`ChunkVerifier`, chunks of 10,000 entries sorted by path), µs per entry, against
//! rebuilding the tree from the same leaves (the import's final check).
//! `cargo bench -p gamechain-runtime --bench state_root`.

use std::time::Instant;

use gamechain_chain::state_root::sparse_merkle::{key_hash, value_hash, SparseMerkleTree};
use gamechain_chain::state_root::ChunkVerifier;
use gamechain_runtime::chain::element_cache::ElementCache;
use gamechain_runtime::chain::{StateCommitment, StateHash};

fn key(i: u64) -> String {
    format!("bal/acct{i}/GOLD")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The blocks of writes: `blocks` of `per_block` existing keys with new values each.
fn blocks(n: u64, blocks: usize, per_block: usize, seed: u64) -> Vec<Vec<(String, Vec<u8>)>> {
    let mut rng = seed;
    (0..blocks)
        .map(|b| {
            (0..per_block)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (
                        key(rng % n),
                        ((b as u128) << 64 | rng as u128).to_le_bytes().to_vec(),
                    )
                })
                .collect()
        })
        .collect()
}

/// µs per write of each block of `writes` applied to `hash` (the old values from `state`).
fn run(
    hash: &mut StateHash,
    state: &mut std::collections::HashMap<String, Vec<u8>>,
    writes: &[Vec<(String, Vec<u8>)>],
    threads: usize,
    cache: &ElementCache,
) -> Vec<f64> {
    writes
        .iter()
        .map(|block| {
            // Net changes: a key written twice in a block keeps its last value.
            let mut last: std::collections::BTreeMap<&str, &[u8]> = Default::default();
            for (k, v) in block {
                last.insert(k, v);
            }
            let olds: Vec<(&str, Option<Vec<u8>>, &[u8])> = last
                .iter()
                .map(|(k, v)| (*k, state.get(*k).cloned(), *v))
                .collect();
            let changes: Vec<(&str, Option<&[u8]>, Option<&[u8]>)> = olds
                .iter()
                .map(|(k, old, new)| (*k, old.as_deref(), Some(*new)))
                .collect();
            let t = Instant::now();
            hash.apply_changes(&changes, threads, cache);
            let us = t.elapsed().as_secs_f64() * 1e6 / changes.len() as f64;
            for (k, v) in last {
                state.insert(k.to_string(), v.to_vec());
            }
            us
        })
        .collect()
}

fn main() {
    let n = std::env::var("STATE_ROOT_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000u64);
    let entries: Vec<(String, Vec<u8>)> = (0..n)
        .map(|i| (key(i), (i as u128).to_le_bytes().to_vec()))
        .collect();
    let updates = blocks(n, 10, 10_000, 0x9e37_79b9_7f4a_7c15);
    let quiet = blocks(n, 21, 10, 0x1234_5678_9abc_def1);
    println!(
        "state roots: {n} entries, 10 blocks of 10,000 writes, 21 quiet blocks of 10 (medians)"
    );
    for (name, kind, threads, cache) in [
        (
            "sparse_merkle, 1 thread",
            StateCommitment::SparseMerkle,
            1,
            0,
        ),
        (
            "sparse_merkle, 2 threads",
            StateCommitment::SparseMerkle,
            2,
            0,
        ),
        (
            "lthash16, 2 threads, no cache",
            StateCommitment::LtHash16,
            2,
            1,
        ),
        (
            "lthash16, 2 threads, cache",
            StateCommitment::LtHash16,
            2,
            8192,
        ),
    ] {
        let t = Instant::now();
        let mut hash = StateHash::from_entries(kind, entries.iter().map(|(k, v)| (k, v)));
        let build_ms = t.elapsed().as_secs_f64() * 1e3;
        let resident = match &hash {
            StateHash::SparseMerkle(tree) => tree.memory_bytes(),
            StateHash::LtHash(_) => 0,
        };
        let mut state: std::collections::HashMap<String, Vec<u8>> =
            entries.iter().cloned().collect();
        let cache = ElementCache::new(cache);
        let busy = median(run(&mut hash, &mut state, &updates, threads, &cache));
        let calm = median(run(&mut hash, &mut state, &quiet, threads, &cache));
        println!(
            "{name:<32} build {build_ms:>7.0} ms ({:>5.1} µs/entry, {:>4.0} B of nodes/entry)  10,000-write block {busy:>5.2} µs/write ({:>5.1} ms)  10-write block {calm:>6.2} µs/write",
            build_ms * 1e3 / n as f64,
            resident as f64 / n as f64,
            busy * 10_000.0 / 1e3,
        );
        if let StateHash::SparseMerkle(tree) = &hash {
            let root = tree.root();
            for (what, k) in [
                ("present", key(n / 2)),
                ("absent", "bal/nobody/GOLD".to_string()),
            ] {
                let value = state.get(&k).cloned();
                let (mut make, mut check) = (Vec::new(), Vec::new());
                let mut proof = tree.prove(&k);
                for _ in 0..1000 {
                    let t = Instant::now();
                    proof = tree.prove(&k);
                    make.push(t.elapsed().as_secs_f64() * 1e6);
                    let t = Instant::now();
                    proof
                        .verify(&root, &k, value.as_deref())
                        .expect("the proof checks");
                    check.push(t.elapsed().as_secs_f64() * 1e6);
                }
                println!(
                    "  proof of a {what} key: {} siblings, {} bytes binary, {} bytes JSON; make {:.2} µs, check {:.2} µs",
                    proof.siblings.len(),
                    proof.size_bytes(),
                    serde_json::to_string(&proof).unwrap().len(),
                    median(make),
                    median(check),
                );
            }
            if threads == 1 {
                let mut leaves: Vec<([u8; 32], [u8; 32], &str)> = state
                    .iter()
                    .map(|(k, v)| (key_hash(k), value_hash(v), k.as_str()))
                    .collect();
                leaves.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                let chunks: Vec<(Vec<([u8; 32], [u8; 32])>, Vec<[u8; 32]>)> = leaves
                    .chunks(10_000)
                    .map(|c| {
                        let proof = tree.prove(c.last().unwrap().2).siblings;
                        (c.iter().map(|l| (l.0, l.1)).collect(), proof)
                    })
                    .collect();
                let t = Instant::now();
                let mut verifier = ChunkVerifier::new(root);
                for (part, siblings) in &chunks {
                    verifier
                        .push(part, siblings)
                        .expect("an honest chunk checks");
                }
                verifier.finish().expect("the whole state");
                let chunked = t.elapsed().as_secs_f64() * 1e6 / n as f64;
                let t = Instant::now();
                let rebuilt =
                    SparseMerkleTree::from_hashed(leaves.iter().map(|l| (l.0, l.1)).collect());
                let whole = t.elapsed().as_secs_f64() * 1e6 / n as f64;
                assert_eq!(rebuilt.root(), root);
                println!(
                    "  a snapshot checked chunk by chunk ({} chunks of 10,000, proofs {} B each on average): {chunked:.2} µs/entry; the whole tree rebuilt from the same leaves {whole:.2} µs/entry",
                    chunks.len(),
                    chunks.iter().map(|c| 2 + 32 * c.1.len()).sum::<usize>() / chunks.len(),
                );
            }
        }
    }
}
