// A transcript's proven starting balances (the Rust side: node/src/verify/game/start.rs; the
// node's: node/src/server/transcript/start.rs). On a chain with state proofs each account a step
// acts for has, in `start`, its GOLD balance (`bal/<account>/GOLD`, canonical decimal text;
// absent: 0) in the state of the block before its first step, proven against that block's state
// root; the block's header must hash to the first step's `prev_hash`, so it is as signed and as
// final as that step. `start_balances` must name those amounts, and the re-execution starts from
// them alone (entries of accounts that act in no step are not used: they cannot change what the
// steps do). A player whose entry says the node cannot prove it (`unproven`: its balance moved
// earlier in the block of its first step) starts from the declared amount; `unproven` names them.
import { stateProofProblem } from './state_proof.js';

const U128_MAX = (1n << 128n) - 1n;
const utf8 = new TextEncoder();

/** A stored balance as the bank reads it (Rust `u128::from_str`, else 0): a BigInt. */
function storedBalance(text) {
  if (typeof text !== 'string' || !/^\+?[0-9]+$/.test(text)) return 0n;
  const v = BigInt(text);
  return v > U128_MAX ? 0n : v;
}

/** The account a step acts for (a session_game's `account`, else `from`); null for a call or a body that does not parse. */
function actingAccount(step) {
  if (step.call !== undefined && step.call !== null) return null;
  try {
    const body = JSON.parse(step.body);
    const a = body.action;
    return a && a.type === 'session_game' ? a.account : body.from;
  } catch {
    return null;
  }
}

/**
 * Checks `t.start` and `t.start_balances` (module comment). `headerHash(header)` gives a
 * header's block hash (lowercase hex). Returns {balances: Map(account → BigInt), unproven:
 * [{account, why}]}, the amounts the re-execution starts from (proven, or declared for the players
 * in `unproven`), or {problem: {field, expected, got}} with the Rust
 * verifier's fields and order: `start` (a player without exactly one proven balance),
 * `start.header`, `start.proof`, `start_balances` (a player's amount missing or not the proven one).
 */
export function checkStart(t, headerHash) {
  const fail = (field, expected, got) => ({ problem: { field, expected, got } });
  const firsts = [];
  t.steps.forEach((s, i) => {
    const account = actingAccount(s);
    if (typeof account === 'string' && !firsts.some(([a]) => a === account)) firsts.push([account, i]);
  });
  const start = Array.isArray(t.start) ? t.start : [];
  const proven = new Map();
  const unproven = [];
  const declared = t.start_balances ?? {};
  const isDecimal = (v) => typeof v === 'string' && /^(0|[1-9][0-9]*)$/.test(v);
  for (const [account, first] of firsts) {
    const entries = start.filter((e) => e && e.account === account);
    if (entries.length !== 1) return fail('start', `one proven starting balance of ${account} (its first step: ${first})`, String(entries.length));
    const entry = entries[0];
    if (typeof entry.unproven === 'string') {
      if (!isDecimal(declared[account])) return fail('start_balances', `a declared starting balance of ${account} (unproven: ${entry.unproven})`, 'none');
      proven.set(account, BigInt(declared[account]));
      unproven.push({ account, why: entry.unproven });
      continue;
    }
    if (entry.header === undefined || entry.header === null || entry.proof === undefined || entry.proof === null) {
      return fail('start.proof', `${account}'s balance in block ${Math.max(0, t.steps[first].header.header.height - 1)} with its proof, or why there is none`, 'neither');
    }
    const step = t.steps[first];
    const parent = Math.max(0, step.header.header.height - 1);
    let hash = null;
    try { hash = headerHash(entry.header); } catch { hash = null; }
    if (hash !== step.header.header.prev_hash || entry.header?.height !== parent) {
      return fail('start.header', `the header of block ${parent}, the one before ${account}'s first step (step ${first})`, `a header of block ${entry.header?.height} that is not its parent`);
    }
    const value = entry.value === undefined || entry.value === null ? null : entry.value;
    const key = `bal/${account}/GOLD`;
    if (value !== null && typeof value !== 'string') return fail('start.proof', `${key} holding text in block ${parent}`, typeof value);
    const problem = stateProofProblem(entry.header.state_root, key, value === null ? null : utf8.encode(value), entry.proof);
    if (problem !== null) return fail('start.proof', `${key} holding ${value ?? 'nothing'} in block ${parent}`, problem);
    proven.set(account, storedBalance(value));
  }
  const show = (list) => list.map(([a, v]) => `${a}: ${v}`).sort().join(', ');
  const same = [...proven].every(([a, v]) => isDecimal(declared[a]) && BigInt(declared[a]) === v);
  if (!same) {
    const shown = [...proven.keys()].map((a) => [a, declared[a] ?? 'none']);
    return fail('start_balances', `the proven balances (${show([...proven].map(([a, v]) => [a, v.toString()]))})`, show(shown));
  }
  return { balances: proven, unproven };
}
