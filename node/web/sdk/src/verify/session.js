// A transcript's proven session steps (the Rust side: node/src/verify/game/session.rs; the
// node's: node/src/server/transcript/session.rs). On a chain with state proofs each
// `session_game` step carries, in `session`, the session record it was admitted under
// (`session/<account>/<key>`, compact JSON `{cap, expires_at_ms, id, modules, spent}`) in the
// state of the block before the step's, proven against that block's state root; that block's
// header must hash to the step's `prev_hash`. The record must allow the step as the chain's
// admission does (runtime/src/transition/session.rs): the step's session id, live at its block's
// time, the module in scope, and cap left for what the re-executed op moved plus the receipt's
// fee and what the transcript's earlier steps of the session in that block moved. What the record
// before the block cannot show is what the block did before the step in other games (their
// spending, a revocation): the whole chain's replay checks that. A node that has no proof to give
// says why (`unproven`: authorized within the block, or a block it did not execute): the step is
// reported, not refused.
import { stateProofProblem } from './state_proof.js';
import { MAX_UNPROVEN_REASON_CHARS } from './start.js';

const utf8 = new TextEncoder();
// Control characters, bidirectional controls, invisible and line-breaking characters, and lone
// surrogates (start.js's rule; the Rust side's `printable`).
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const AMOUNT = /^(0|[1-9][0-9]*)$/;

/**
 * Checks step `s`'s `session` (a `session_game` of `module` whose parsed body is `body`;
 * `debited`: the GOLD base units the re-executed op moved for the account, as the chain counts
 * them against the cap, a BigInt; `sameBlock`: what the transcript's earlier steps of the same
 * session in the same block moved, fees included). `headerHash(header)` gives a header's block
 * hash. Returns {moved} (the step's debit and fee) when proven and allowed, {unproven: why} for
 * the node's reason, or {problem: {field, expected, got}} with the Rust verifier's fields:
 * `session`, `session.header`, `session.proof`, `session.record` (and `receipt` for a fee that is
 * not canonical decimal text, which the Rust side refuses when it reads the transcript).
 */
export function checkSession(s, body, module, debited, headerHash, sameBlock = 0n) {
  const fail = (field, expected, got) => ({ problem: { field, expected: String(expected), got: String(got) } });
  const a = body.action;
  const key = `session/${a.account}/${body.from}`;
  const entry = s.session;
  if (entry === undefined || entry === null || typeof entry !== 'object') return fail('session', `a proof of ${key}, the session the step was admitted under`, 'none');
  if (entry.unproven !== undefined && entry.unproven !== null) {
    const why = entry.unproven;
    if (typeof why !== 'string' || why.length === 0 || [...why].length > MAX_UNPROVEN_REASON_CHARS || UNPRINTABLE.test(why)) {
      return fail('session', `a reason of 1 to ${MAX_UNPROVEN_REASON_CHARS} printable characters why the session is not proven`, JSON.stringify(String(why).slice(0, 80)));
    }
    return { unproven: why };
  }
  const h = s.header.header;
  const parent = entry.header;
  if (parent === undefined || parent === null) return fail('session.header', `the header of block ${h.height - 1}`, 'none');
  let parentHash;
  try { parentHash = headerHash(parent); } catch (e) { return fail('session.header', `the header of block ${h.height - 1}`, `a header that does not encode (${e.message})`); }
  if (parentHash !== h.prev_hash) return fail('session.header', `the header of block ${h.height - 1}, the parent of the step's`, `a header of block ${parent.height} that is not it`);
  if (entry.proof === undefined || entry.proof === null) return fail('session.proof', `a proof of ${key}`, 'none');
  const value = entry.value === undefined || entry.value === null ? null : entry.value;
  if (value !== null && typeof value !== 'string') return fail('session.proof', `a proof of ${key}`, 'a value that is not text');
  const problem = stateProofProblem(parent.state_root, key, value === null ? null : utf8.encode(value), entry.proof);
  if (problem !== null) return fail('session.proof', `${key} as block ${parent.height}'s state root holds it`, problem);
  if (value === null) return fail('session', `a session of ${body.from} authorized by ${a.account}`, `no record at ${key} before block ${h.height}: the key was not authorized`);
  let r;
  try { r = JSON.parse(value); } catch { r = null; }
  // Exactly the record the chain writes (SessionRecord: compact JSON, fields in order, the scope
  // sorted without repeats), so both verifiers read the same record.
  const wellFormed = r && typeof r === 'object' && AMOUNT.test(r.cap) && AMOUNT.test(r.spent) && Number.isSafeInteger(r.id) && r.id >= 0
    && Number.isSafeInteger(r.expires_at_ms) && r.expires_at_ms >= 0 && Array.isArray(r.modules) && r.modules.every((m) => typeof m === 'string')
    && r.modules.every((m, i) => i === 0 || r.modules[i - 1] < m)
    && value === JSON.stringify({ cap: r.cap, expires_at_ms: r.expires_at_ms, id: r.id, modules: r.modules, spent: r.spent });
  if (!wellFormed) return fail('session.record', 'a session record', JSON.stringify(value.slice(0, 200)));
  if (r.id !== a.session) return fail('session.record', `session ${a.session}`, `session ${r.id}`);
  if (!(h.time_ms < r.expires_at_ms)) return fail('session.record', `a session live at block time ${h.time_ms} ms`, `a session that expired at ${r.expires_at_ms} ms`);
  if (!r.modules.includes(module)) return fail('session.record', `a session whose scope holds ${module}`, `scope ${JSON.stringify(r.modules)}`);
  const cap = BigInt(r.cap);
  const spent = BigInt(r.spent);
  const remaining = cap > spent ? cap - spent : 0n;
  const fee = s.receipt.fee === undefined ? 0n : (typeof s.receipt.fee === 'string' && AMOUNT.test(s.receipt.fee) ? BigInt(s.receipt.fee) : null);
  if (fee === null) return fail('receipt', 'a fee in canonical decimal GOLD base units', JSON.stringify(s.receipt.fee));
  const moved = debited + fee;
  if (moved + sameBlock > remaining) return fail('session.record', `cap left for the ${moved} GOLD base units the step moved (fee included), after ${sameBlock} by the transcript's earlier steps of the session in its block`, `${remaining} left of the cap of ${cap}`);
  return { moved };
}
