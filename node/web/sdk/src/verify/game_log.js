// A game's log (the Rust side: runtime/chain/src/game_log.rs, node/src/verify/game/log.rs): on
// a chain with state proofs the runtime keeps, at `log/<module>/<game>`, a hash chain over every
// step of the game, 48 bytes: head (32) ‖ steps (u64 LE) ‖ last_height (u64 LE), where each step
// makes head' = SHA-256("gamechain/game-log/v1" ‖ head ‖ leaf) (leaf: a transaction's txid, a
// scheduled call's receipt hash), steps' = steps + 1, last_height' = the step's height. A
// transcript's `log` proves the chain's value against a block's state root; the steps must hash
// to it exactly, so a cut end or a left-out step is caught. The module's record proven at the
// same block anchors the code (`codeProblem`).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { stateProofProblem } from './state_proof.js';

export const GAME_LOG_DOMAIN = new TextEncoder().encode('gamechain/game-log/v1');

/** The log after one more step: {head: Uint8Array(32), steps: bigint, lastHeight: bigint}. */
export function extendGameLog(log, leaf, height) {
  const input = new Uint8Array(GAME_LOG_DOMAIN.length + 64);
  input.set(GAME_LOG_DOMAIN, 0);
  input.set(log.head, GAME_LOG_DOMAIN.length);
  input.set(leaf, GAME_LOG_DOMAIN.length + 32);
  return { head: sha256(input), steps: log.steps + 1n, lastHeight: BigInt(height) };
}

function parseLog(hex) {
  if (typeof hex !== 'string' || !/^[0-9a-f]{96}$/.test(hex)) return null;
  const b = hexToBytes(hex);
  const v = new DataView(b.buffer, b.byteOffset);
  return { head: b.slice(0, 32), steps: v.getBigUint64(32, true), lastHeight: v.getBigUint64(40, true) };
}

/**
 * The code anchored (the Rust side: node/src/verify/game/log.rs `check_code`): the module's
 * record (`module/<module>`, compact JSON) proven at the log's block must name the transcript's
 * code hash, deployed at or before the first step and not upgraded since. null, or the divergence.
 */
function codeProblem(t, log, height) {
  const key = `module/${t.module}`;
  const rec = log.module_record;
  if (rec === undefined || rec === null) return { field: 'code.record', expected: `the module's record (${key}) proven at block ${height}`, got: 'none' };
  if (typeof rec.value !== 'string') return { field: 'code.record', expected: 'a module record', got: typeof rec.value };
  const problem = stateProofProblem(log.header.header.state_root, key, new TextEncoder().encode(rec.value), rec.proof);
  if (problem !== null) return { field: 'code.record', expected: `${key} holding the record in block ${height}`, got: problem };
  let record;
  try { record = JSON.parse(rec.value); } catch (e) { return { field: 'code.record', expected: 'a module record', got: e.message }; }
  if (record.code_hash !== t.code_hash) return { field: 'code_hash', expected: `${record.code_hash} (the module's record at block ${height})`, got: t.code_hash };
  const first = t.steps.length ? t.steps[0].height : 0;
  const upgraded = Number.isSafeInteger(record.upgraded_height) ? record.upgraded_height : null;
  if (record.deployed_height > first || (upgraded !== null && upgraded >= first)) {
    return { field: 'code.upgraded', expected: `code in place before the game's first step (block ${first})`, got: `code deployed or upgraded at block ${upgraded ?? record.deployed_height}` };
  }
  return null;
}

/**
 * Checks a transcript's `log` against its steps' `leaves` (Uint8Array(32) each, in order) and
 * `heights`: null when the proof shows the chain's log of the game at `log.header` and the
 * steps hash to it; else {field, expected, got} (the Rust verifier's fields and order: `log`,
 * then `headerProblem(log)`'s (the block's signer and finality, the caller's rules), then
 * `log.proof`, `code.record`, `code_hash`, `code.upgraded`, `log.steps`).
 */
export function gameLogProblem(t, leaves, heights, headerProblem = () => null) {
  const key = `log/${t.module}/${t.game}`;
  const log = t.log;
  if (log === undefined || log === null) return { field: 'log', expected: `the game's log (${key}) proven against a block's state root`, got: 'none' };
  if (log.key !== key) return { field: 'log', expected: key, got: String(log.key) };
  const height = log.header?.header?.height;
  const last = heights.length ? heights[heights.length - 1] : 0;
  if (!Number.isSafeInteger(height) || height < last) return { field: 'log', expected: `a block at or after the last step's (${last})`, got: `block ${height}` };
  const bad = headerProblem(log);
  if (bad !== null) return bad;
  const chain = parseLog(log.value);
  if (chain === null) return { field: 'log', expected: 'a 48-byte game log', got: String(log.value).slice(0, 100) };
  const problem = stateProofProblem(log.header.header.state_root, key, hexToBytes(log.value), log.proof);
  if (problem !== null) return { field: 'log.proof', expected: `${key} holding the log in block ${height}`, got: problem };
  const code = codeProblem(t, log, height);
  if (code !== null) return code;
  let shown = { head: new Uint8Array(32), steps: 0n, lastHeight: 0n };
  for (let i = 0; i < leaves.length; i++) shown = extendGameLog(shown, leaves[i], heights[i]);
  const same = shown.steps === chain.steps && shown.lastHeight === chain.lastHeight && bytesToHex(shown.head) === bytesToHex(chain.head);
  if (same) return null;
  const got = chain.steps > shown.steps
    ? `the chain logged ${chain.steps} steps of the game, the last in block ${chain.lastHeight}: the transcript shows ${shown.steps} (cut, or steps left out)`
    : `the chain logged ${chain.steps} steps (the last in block ${chain.lastHeight}), the transcript's ${shown.steps} hash to another log`;
  return { field: 'log.steps', expected: "the transcript's steps, every one of the game's in order", got };
}
