// A transcript's proven starting balances (the Rust side: node/src/verify/game/start.rs; the
// node's: node/src/server/transcript/start.rs). On a chain with state proofs each account a step
// acts for has, in `start`, its GOLD balance (`bal/<account>/GOLD`, canonical decimal text;
// absent: 0) in the state of the block before one of its steps (the witnessed step: the node gives
// its first, or its first that moved its GOLD), proven against that block's state root; the
// block's header must hash to that step's `prev_hash`, so it is as signed and as final as that
// step. The re-execution starts each player from that amount and sets it again just before the
// witnessed step (`resets`); `start_balances` must name those amounts (entries of accounts that
// act in no step are not used: they cannot change what the steps do). A player whose entry says
// the node cannot prove it (`unproven`: its balance moved earlier in that block) starts from the
// declared amount; `unproven` names them.
import { stateProofProblem } from './state_proof.js';

const U128_MAX = (1n << 128n) - 1n;
const utf8 = new TextEncoder();

/** A stored balance as the bank reads it (Rust `u128::from_str`, else 0): a BigInt. */
function storedBalance(text) {
  if (typeof text !== 'string' || !/^\+?[0-9]+$/.test(text)) return 0n;
  const v = BigInt(text);
  return v > U128_MAX ? 0n : v;
}

/** Longest reason a node may give for a balance it cannot prove, characters (printable only). */
export const MAX_UNPROVEN_REASON_CHARS = 300;

// Control characters and the Unicode bidirectional controls: a reason holding one is refused.
// Also invisible and line-breaking characters and lone surrogates (the Rust side's `printable`).
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

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
 * header's block hash (lowercase hex). Returns {balances: Map(account → BigInt), resets:
 * [{index, account, amount: BigInt}], unproven: [{account, why}]}: the amounts the re-execution
 * starts from (proven, or declared for the players in `unproven`) and the balances to set again
 * before step `index`; or {problem: {field, expected, got}} with the Rust verifier's fields and
 * order: `start` (a player without exactly one entry, or a reason that is not 1 to 300 printable
 * characters), `start.header`, `start.proof`, `start_balances` (a player's amount missing or not
 * the proven one).
 */
export function checkStart(t, headerHash) {
  const fail = (field, expected, got) => ({ problem: { field, expected, got } });
  const players = [];
  t.steps.forEach((s, i) => {
    const account = actingAccount(s);
    if (typeof account !== 'string') return;
    const p = players.find(([a]) => a === account);
    if (p) p[1].push(i); else players.push([account, [i]]);
  });
  const start = Array.isArray(t.start) ? t.start : [];
  const proven = new Map();
  const resets = [];
  const unproven = [];
  const declared = t.start_balances ?? {};
  const isDecimal = (v) => typeof v === 'string' && /^(0|[1-9][0-9]*)$/.test(v);
  for (const [account, steps] of players) {
    const first = steps[0];
    const entries = start.filter((e) => e && e.account === account);
    if (entries.length !== 1) return fail('start', `one starting balance of ${account} (its first step: ${first})`, String(entries.length));
    const entry = entries[0];
    if (entry.unproven !== undefined && entry.unproven !== null) {
      const why = entry.unproven;
      if (typeof why !== 'string' || why.length === 0 || [...why].length > MAX_UNPROVEN_REASON_CHARS || UNPRINTABLE.test(why)) {
        return fail('start', `a reason of 1 to ${MAX_UNPROVEN_REASON_CHARS} printable characters why ${account}'s balance is not proven`, JSON.stringify(String(why).slice(0, 80)));
      }
      if (!isDecimal(declared[account])) return fail('start_balances', `a declared starting balance of ${account} (unproven: ${why})`, 'none');
      proven.set(account, BigInt(declared[account]));
      unproven.push({ account, why });
      continue;
    }
    if (entry.header === undefined || entry.header === null || entry.proof === undefined || entry.proof === null) {
      return fail('start.proof', `${account}'s balance before one of its steps with its proof, or why there is none`, 'neither');
    }
    let hash = null;
    try { hash = headerHash(entry.header); } catch { hash = null; }
    const at = steps.find((i) => {
      const h = t.steps[i].header.header;
      return hash !== null && h.prev_hash === hash && h.height === entry.header.height + 1;
    });
    if (at === undefined) return fail('start.header', `the header of the block before one of ${account}'s steps`, `a header of block ${entry.header?.height} that is the parent of none of them`);
    const value = entry.value === undefined || entry.value === null ? null : entry.value;
    const key = `bal/${account}/GOLD`;
    if (value !== null && typeof value !== 'string') return fail('start.proof', `${key} holding text in block ${entry.header.height}`, typeof value);
    const problem = stateProofProblem(entry.header.state_root, key, value === null ? null : utf8.encode(value), entry.proof);
    if (problem !== null) return fail('start.proof', `${key} holding ${value ?? 'nothing'} in block ${entry.header.height}`, problem);
    const amount = storedBalance(value);
    proven.set(account, amount);
    if (at !== first) resets.push({ index: at, account, amount });
  }
  const show = (list) => list.map(([a, v]) => `${a}: ${v}`).sort().join(', ');
  const same = [...proven].every(([a, v]) => isDecimal(declared[a]) && BigInt(declared[a]) === v);
  if (!same) {
    const shown = [...proven.keys()].map((a) => [a, declared[a] ?? 'none']);
    return fail('start_balances', `the proven balances (${show([...proven].map(([a, v]) => [a, v.toString()]))})`, show(shown));
  }
  resets.sort((a, b) => a.index - b.index);
  return { balances: proven, resets, unproven };
}
